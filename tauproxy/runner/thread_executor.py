"""`--executor thread` (the default): trials on a pool of `--max-concurrency` threads in this process.

Every trial shares the run's transport, so its cassette layer writes each live call to disk before
the trial uses the response; nothing is left to record when a trial finishes.

A strict replay (`replay`, or `once` over a recorded cassette) at concurrency 1 runs each trial on
the calling thread instead of a pool of one: handing 200 τ² trials to a worker thread and back cost
about 4% of the replay's CPU (bench/floors.py measures the replay). Only a strict replay does: none
of its calls can reach a provider, so a Ctrl-C landing inside a trial (which it then stops at once)
cannot lose an answer that was paid for. A run that may go live keeps its trials on the pool, where
the interrupt reaches only the waiting thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from tauproxy.data_model.result import SimulationRun
from tauproxy.proxy.transport import Transport
from tauproxy.runner.prepared import PreparedRun
from tauproxy.runner.stack import replays_only
from tauproxy.runner.trial import TrialSpec, run_trial


class ThreadExecutor:
    """A `TrialExecutor` (runner/executor.py) whose handles are futures: the pool's, or already done."""

    def __init__(self, run: PreparedRun, transport: Transport) -> None:
        self._run = run
        self._transport = transport
        config = run.config
        self.inline = config.max_concurrency == 1 and replays_only(config, transport)
        self._pool = None if self.inline else ThreadPoolExecutor(max_workers=config.max_concurrency)

    def window(self, budget_blind: bool) -> int:
        # The user chose this window with --max-concurrency, so it holds even before there is a
        # cost to project from (unlike Ray's, which the cluster's size sets).
        return self._run.config.max_concurrency

    def submit(self, spec: TrialSpec) -> Future[SimulationRun]:
        run = self._run
        if self._pool is not None:
            return self._pool.submit(run_trial, spec, run.pack, run.config, self._transport, run.pricing)
        # As the pool's future would hold it: the trial's result or its exception, for `result`. A
        # KeyboardInterrupt is not caught: it reaches run_pending at once, as it would while waiting.
        done: Future[SimulationRun] = Future()
        try:
            done.set_result(run_trial(spec, run.pack, run.config, self._transport, run.pricing))
        except Exception as exc:
            done.set_exception(exc)
        return done

    def wait_any(self, handles: Sequence[Future[SimulationRun]]) -> list[Future[SimulationRun]]:
        finished, _ = wait(handles, return_when=FIRST_COMPLETED)
        return list(finished)

    def result(self, handle: Future[SimulationRun]) -> SimulationRun:
        return handle.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
