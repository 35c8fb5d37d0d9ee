"""The defaults of a run that RunConfig and the CLI's flags share.

Its own module, importing nothing, so the CLI can show them in `--help` without importing RunConfig
(which pulls in the engine, the domain packs and the proxy layer).
"""

from __future__ import annotations

from typing import Final

DEFAULT_SEED: Final = 300
DEFAULT_NUM_TRIALS: Final = 1
DEFAULT_MAX_CONCURRENCY: Final = 1
DEFAULT_USER_LLM: Final = "scripted/user"
DEFAULT_JUDGE_LLM: Final = "scripted/judge"
DEFAULT_RECORD_MODE: Final = "auto"  # a RecordMode value; proxy.modes parses it
DEFAULT_EXECUTOR: Final = "thread"
# Trials in a row ending in the same infrastructure error before the run stops: a wrong key or a
# dead endpoint shows within a few trials, and burning through the rest would only repeat it.
DEFAULT_MAX_INFRA_ERRORS: Final = 5

# The largest runs accepted, checked before anything is planned: a typo (`--num-trials 100000000`)
# fails at once with one line instead of planning trials until memory runs out. A planned trial costs
# ~130 bytes, but a finished one is kept in memory and in results.json (kilobytes each), and a resumed
# run re-reads them all: 100,000 trials is already far beyond a full τ²-bench domain at 4 trials.
NUM_TRIALS_LIMIT: Final = 1000  # trials per task
PLANNED_TRIALS_LIMIT: Final = 100_000  # tasks x trials in one run
# Threads at once (thread executor) or live calls at once (ray); more than any provider's rate limit.
MAX_CONCURRENCY_LIMIT: Final = 1024
