"""Which sample a request to `tauproxy serve` is.

The key and the sample key are the in-process ones (`key.identify`), so one cassette serves both.
What the server cannot see is the harness's trial, so it is told or not:

- With `X-Tauproxy-Scope: <task_id>/<trial>` (the last "/" splits, so task ids may contain slashes),
  occurrences count per request key within that scope, exactly as in-process: k identical calls in
  one trial are k samples. A failed attempt (upstream error, replay miss, an answer that could not be
  recorded) gives its occurrence number back, so a client's retry is the same sample as its try.
- Without it, a sample is the request itself: its key (model, messages, tools, every sampling
  parameter) and its seed, in the fixed scope ("serve", 0) (`key.SERVE_SCOPE`, which τ²-bench's own
  calls through tauproxy/tau2bench share), always occurrence 0. Identical requests
  are one sample, however many conversations send them and in whatever order they arrive.

Why no counter without the header. A counter in arrival order breaks two ways: a second run against
the same process asks for occurrence 1 of everything (replay misses, auto pays again), and
conversations that start with identical requests (τ²-bench gives every task of a trial the same
seed, and most telecom tasks share a user scenario with another) race for the numbers, so a noisy
model's recorded answers swap between tasks on replay and the conversations then miss. With one
sample per request, a conversation's answers depend only on its own messages: conversations that
are identical so far get identical answers, as from a deterministic model, and part ways exactly
when their requests do (a tool result of their own task), from where every request is their own.
The cassette layer sends concurrent identical misses upstream once (single flight), so recording
at any concurrency gives the same cassette shape, and replay at any concurrency gives the same
conversations.

The trade-off: without the header, a harness that sends the byte-identical request twice on purpose
to draw two samples gets the same answer twice. Trials stay distinct samples as long as their
requests differ, which τ²-bench's per-trial seed ensures; send the scope header otherwise.

`X-Tauproxy-Role: agent|user|judge` optionally names the caller's role; without it the role is
recognised from the system prompt (serve/roles.py). It is stored with recorded calls, steers the
nearest-call search of a miss report, and is never part of any key.
"""

from __future__ import annotations

from typing import get_args

from tauproxy.data_model.call import CallRole
from tauproxy.data_model.key import TrialScope
from tauproxy.serve.errors import HttpError

SCOPE_HEADER = "x-tauproxy-scope"
ROLE_HEADER = "x-tauproxy-role"
_ROLES: tuple[str, ...] = get_args(CallRole)


def parse_scope(value: str | None) -> TrialScope | None:
    """The trial scope a client named, or None when it named none."""
    if value is None or not value.strip():
        return None
    task_id, slash, trial = value.strip().rpartition("/")
    if not slash or not task_id or not trial.strip().lstrip("-").isdigit():
        raise HttpError(400, f"{SCOPE_HEADER} must be '<task_id>/<trial>' with an integer trial, got {value!r}")
    return TrialScope(task_id=task_id, trial=int(trial))


def parse_role(value: str | None) -> CallRole | None:
    """The role a client named, or None (then serve/roles.py recognises it)."""
    if value is None or not value.strip():
        return None
    role = value.strip().lower()
    if role not in _ROLES:
        raise HttpError(400, f"{ROLE_HEADER} must be one of {', '.join(_ROLES)}, got {value!r}")
    return role  # type: ignore[return-value]  # checked against CallRole's values just above
