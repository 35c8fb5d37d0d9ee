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
