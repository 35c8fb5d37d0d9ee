"""`--executor thread` (the default): trials on a pool of `--max-concurrency` threads in this process.

Every trial shares the run's transport, so its cassette layer writes each live call to disk before
the trial uses the response; nothing is left to record when a trial finishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from tauproxy.data_model.result import SimulationRun
from tauproxy.proxy.transport import Transport
from tauproxy.runner.prepared import PreparedRun
from tauproxy.runner.trial import TrialSpec, run_trial


class ThreadExecutor:
    """A `TrialExecutor` (runner/executor.py) whose handles are the pool's futures."""

    def __init__(self, run: PreparedRun, transport: Transport) -> None:
        self._run = run
        self._transport = transport
        self._pool = ThreadPoolExecutor(max_workers=run.config.max_concurrency)

    def window(self, budget_blind: bool) -> int:
        # The user chose this window with --max-concurrency, so it holds even before there is a
        # cost to project from (unlike Ray's, which the cluster's size sets).
        return self._run.config.max_concurrency

    def submit(self, spec: TrialSpec) -> Future[SimulationRun]:
        run = self._run
        return self._pool.submit(run_trial, spec, run.pack, run.config, self._transport, run.pricing)

    def wait_any(self, handles: Sequence[Future[SimulationRun]]) -> list[Future[SimulationRun]]:
        finished, _ = wait(handles, return_when=FIRST_COMPLETED)
        return list(finished)

    def result(self, handle: Future[SimulationRun]) -> SimulationRun:
        return handle.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
