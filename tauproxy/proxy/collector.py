"""The cassette layer of a Ray worker: `CassetteTransport` with a recorder that collects, never writes.

A hit replays from the worker's read-only snapshot of the cassette. A miss goes live as in the run's
mode, and the new call is collected as a `CallRecording` instead of appended. The worker returns the
collected calls with the trial's SimulationRun; the driver, the cassette's single writer, appends each
with `Cassette.record` (same lock, single write and fsync) before it saves the trial.

Lookups behave as on the thread path: a sample key names its (task, trial, occurrence), so one trial
can never hit a call recorded by another trial of the same run, and not seeing the other trials'
new calls changes nothing. The exception is calls that name no trial (τ²-bench's own, through the
bridge): identical ones share one live answer within a trial here, and within the whole run on the
thread path; across a Ray run's trials each goes live once.
"""

from __future__ import annotations

from tauproxy.data_model.completion import CallRecording
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.recorder import CassetteTransport
from tauproxy.proxy.transport import Transport
from tauproxy.store.cassette import Cassette


class CollectingTransport(CassetteTransport):
    """CassetteTransport whose new calls are kept in `collected`, for one trial."""

    def __init__(self, cassette: Cassette, mode: RecordMode, live: Transport | None, pricing: Pricing) -> None:
        self.collected: list[CallRecording] = []
        super().__init__(cassette, mode, live, pricing, recorder=self.collected.append)
