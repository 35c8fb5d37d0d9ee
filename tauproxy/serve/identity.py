"""Which sample a request to `tauproxy serve` is: its trial scope and its occurrence number.

The key and the sample key are the in-process ones (`tauproxy.data_model.key`), so one cassette serves
both. What the server cannot see is the harness's trial, so it is told or assumed:

- A request may carry `X-Tauproxy-Scope: <task_id>/<trial>` (the last "/" splits, so task ids may
  contain slashes). Occurrences then count per request key within that scope, exactly as in-process.
- Without the header the scope is ("serve", 0) for every request, and occurrences count per request
  key in ARRIVAL ORDER over the server's lifetime: the first time a key is seen it is occurrence 0,
  the second time 1, and so on.

What that means for harnesses:
- Two requests with the same key are only ever identical requests (same model, messages, tools,
  sampling params and seed). Harnesses whose conversations differ anywhere never share a counter.
- Identical requests sent concurrently (e.g. two trials that send the same seed, or two harnesses
  against one server) get occurrences in whatever order they arrive, so which recorded sample each
  one replays can swap between runs. At temperature 0 against a deterministic model that is
  harmless; where the samples differ, send the scope header (one scope per trial) to pin them.
- Counters live as long as the process. Replaying a run needs the same counting from zero: restart
  the server (or use fresh scopes) between runs, otherwise the second run asks for occurrence 1,
  which replay mode reports as a miss and auto mode records anew (a paid call).
- A failed attempt (upstream error, replay miss, unrecordable answer) gives its occurrence number
  back, so a client's retry is the same sample as its first try.
- The seed in the request (tau2-bench sends one per trial) is part of the sample key, which is what
  usually tells trials apart even without the header.

`X-Tauproxy-Role: agent|user|judge` optionally names the caller's role; it is stored with recorded
calls (it steers the nearest-call search of a miss report) and is never part of any key.
"""

from __future__ import annotations

from typing import get_args

from tauproxy.data_model.call import CallRole
from tauproxy.data_model.key import TrialScope
from tauproxy.serve.errors import HttpError

SCOPE_HEADER = "x-tauproxy-scope"
ROLE_HEADER = "x-tauproxy-role"
DEFAULT_SCOPE = TrialScope(task_id="serve", trial=0)
DEFAULT_ROLE: CallRole = "agent"
_ROLES: tuple[str, ...] = get_args(CallRole)


def parse_scope(value: str | None) -> TrialScope:
    if value is None or not value.strip():
        return DEFAULT_SCOPE
    task_id, slash, trial = value.strip().rpartition("/")
    if not slash or not task_id or not trial.strip().lstrip("-").isdigit():
        raise HttpError(400, f"{SCOPE_HEADER} must be '<task_id>/<trial>' with an integer trial, got {value!r}")
    return TrialScope(task_id=task_id, trial=int(trial))


def parse_role(value: str | None) -> CallRole:
    if value is None or not value.strip():
        return DEFAULT_ROLE
    role = value.strip().lower()
    if role not in _ROLES:
        raise HttpError(400, f"{ROLE_HEADER} must be one of {', '.join(_ROLES)}, got {value!r}")
    return role  # type: ignore[return-value]  # checked against CallRole's values just above
