"""The one error tree of tauproxy.

    TauproxyError                  every error tauproxy raises on purpose
    ├── ConfigError                bad flags, bad config files, unknown names
    ├── DomainError                a domain pack that does not load or validate
    ├── InfrastructureError        the infrastructure failed, not the agent: never a score
    │   ├── CassetteError          a cassette file that cannot be read or written
    │   │   ├── CassetteWriteError a live answer could not be recorded: the run stops
    │   │   └── ReplayMissError    strict replay met a request that was never recorded
    │   ├── ResultsWriteError      a finished trial could not be saved: the run stops
    │   └── ModelCallError         a model call failed (provider error, bad response, bad name)
    └── ToolExecutionError         a tool refused its input; becomes an error tool message

A trial that meets an InfrastructureError is saved as `infrastructure_error`: excluded from every
score, counted apart, and run again on resume. Some stop the whole run instead: a replay miss
(strict replay promised the run needs nothing live), and a cassette or results write failure (going
on would pay for answers or trials that cannot be kept).

The CLI prints the message of a TauproxyError on one line and exits non-zero; anything else is a
bug and keeps its traceback.

A ReplayMissError carries what it found as data (`ReplayMiss`: the call, the nearest recorded call,
how the two requests differ), and its message is rendered from that data. Those types are plain
dataclasses defined here because this module is the bottom layer: it imports nothing of tauproxy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# A request difference is shown in at most this many lines (the rest is counted, not shown).
MAX_DIFF_LINES = 40
# The samples a request is recorded as, listed when a miss is the same request as another sample.
SHOWN_SAMPLES = 4


class TauproxyError(Exception):
    """Root of every error tauproxy raises on purpose."""


class ConfigError(TauproxyError):
    """A flag, config file or name given by the user is invalid."""


class DomainError(TauproxyError):
    """A domain pack is missing, malformed or inconsistent."""


class InfrastructureError(TauproxyError):
    """Something under the agent failed (a provider, the network, the disk): the trial is not scored."""


class CassetteError(InfrastructureError):
    """A cassette cannot be read or written."""


class CassetteWriteError(CassetteError):
    """A live answer, paid for, could not be appended to the cassette. The run stops at once."""


@dataclass(frozen=True)
class CallSummary:
    """Who a call is: its sample identity, role and model (a missed call, or a recorded one).

    `task_id` and `trial` name the trial the call belongs to, None when that is not known. `scoped`
    says whether its sample was keyed in that trial; a call keyed without a trial scope (`tauproxy
    serve` without a scope header, τ²-bench's own calls) is one sample per distinct request, and
    only says its trial when the caller knew it (a trial of `tauproxy run`), never when recorded.
    """

    key: str
    sample_key: str
    task_id: str | None
    trial: int | None
    occurrence: int
    seed: int | None
    call_index: int
    role: str
    model: str | None
    scoped: bool = True

    @property
    def where(self) -> str:
        """`task T, trial N`, or what is known instead."""
        if self.task_id is None:
            return "no trial scope (one sample per distinct request)"
        trial = f"task {self.task_id}, trial {self.trial}"
        return trial if self.scoped else f"{trial} (keyed without a trial scope)"

    @property
    def place(self) -> tuple[bool, str | None, int | None]:
        """What two calls share when they are of one trial's calls (or both of none)."""
        return (self.scoped, self.task_id, self.trial)


DifferencePart = Literal["model", "param", "tool_choice", "tool", "tools", "message", "messages", "sample"]


@dataclass(frozen=True)
class RequestDifference:
    """One way a request differs from a recorded one: `part` says what differs, `name` which one (a
    param or tool name, a message index), and `lines` says how, as it is shown to people."""

    part: DifferencePart
    name: str | None
    lines: tuple[str, ...]


def render_differences(differences: tuple[RequestDifference, ...] | list[RequestDifference]) -> str:
    """The differences as text, at most MAX_DIFF_LINES lines."""
    lines = [line for difference in differences for line in difference.lines]
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[: MAX_DIFF_LINES - 1], f"… {len(lines) - MAX_DIFF_LINES + 1} more lines"]
    return "\n".join(lines)


@dataclass(frozen=True)
class ReplayMiss:
    """What strict replay found when a call was not recorded.

    `recorded_as` is non-empty when this very request is recorded, as other samples (another seed,
    scope or occurrence); otherwise `nearest` is the recorded call it most likely meant to match
    (None in an empty cassette) and `differences` how the two requests differ.
    `scope_has_calls` says whether the cassette holds any call of the missed call's task and trial;
    `damaged_lines` and `first_damage` describe lines of the cassette that could not be read.
    """

    call: CallSummary
    cassette: str
    nearest: CallSummary | None = None
    differences: tuple[RequestDifference, ...] = ()
    recorded_as: tuple[CallSummary, ...] = ()
    scope_has_calls: bool = False
    damaged_lines: int = 0
    first_damage: str | None = None

    def render(self) -> str:
        call = self.call
        where = f"{call.where}, call #{call.call_index} ({call.role})"
        if self.recorded_as:
            shown = ", ".join(
                f"task {e.task_id} trial {e.trial} occurrence {e.occurrence} seed {e.seed}"
                if e.scoped
                else f"without a trial scope, seed {e.seed}"
                for e in self.recorded_as[:SHOWN_SAMPLES]
            )
            more = " ..." if len(self.recorded_as) > SHOWN_SAMPLES else ""
            return (
                f"replay miss: {where}: this request is recorded in {self.cassette} (key {call.key[:12]}), but not "
                f"as this sample (seed {call.seed}, occurrence {call.occurrence}); recorded as: {shown}{more}"
            )
        lines = [f"replay miss: {where} was never recorded in {self.cassette} (key {call.key[:12]})"]
        nearest = self.nearest
        if call.scoped and (nearest is None or nearest.place != call.place):
            lines.append(
                f"the cassette holds no {call.role + ' ' if self.scope_has_calls else ''}call for this task/trial"
            )
        if nearest is not None:
            lines.append(
                f"nearest recorded call: key {nearest.key[:12]}, {nearest.where}, "
                f"call #{nearest.call_index} ({nearest.role})"
            )
            lines.append(render_differences(self.differences))
        if self.damaged_lines:
            lines.append(
                f"note: the cassette has {self.damaged_lines} damaged line(s), first "
                f"{self.first_damage}; run `tauproxy cassette verify`"
            )
        return "\n".join(lines)


class ReplayMissError(CassetteError):
    """Strict replay was asked for a request that the cassette does not hold.

    `miss` holds what was found, as data (`call`, `nearest` and `differences` are its fields, also
    reachable on the error); the message is rendered from it.
    """

    def __init__(self, miss: ReplayMiss) -> None:
        super().__init__(miss.render())
        self.miss = miss

    def __reduce__(self) -> tuple[type[ReplayMissError], tuple[ReplayMiss]]:
        # Rebuilt from its data when it crosses a process (a Ray worker's miss reaches the driver).
        return type(self), (self.miss,)

    @property
    def call(self) -> CallSummary:
        return self.miss.call

    @property
    def nearest(self) -> CallSummary | None:
        return self.miss.nearest

    @property
    def differences(self) -> tuple[RequestDifference, ...]:
        return self.miss.differences


class ResultsWriteError(InfrastructureError):
    """A finished trial or the results file could not be written (disk full, read-only)."""


class ModelCallError(InfrastructureError):
    """A model call failed.

    `status_code` is the provider's HTTP status when it gave one; `code` names failures that have
    none ("upstream_timeout", "upstream_unreachable", "upstream_malformed"); `retry_after` is the
    provider's Retry-After header, passed on by `serve`.
    """

    def __init__(
        self, message: str, status_code: int | None = None, code: str | None = None, retry_after: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.retry_after = retry_after


class ToolExecutionError(TauproxyError):
    """A tool rejected its call; the engine turns it into an error tool message."""
