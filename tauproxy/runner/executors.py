"""Which executor runs a run's trials: `config.executor` is looked at here and nowhere else.

The Ray executor is imported only when a run asks for it: Ray is an optional extra, and its module
brings the worker side (collecting recorder, live-call slots) that a thread run never needs.
"""

from __future__ import annotations

from typing import Any, assert_never

from tauproxy.proxy.transport import Transport
from tauproxy.runner.config import RunConfig
from tauproxy.runner.executor import TrialExecutor
from tauproxy.runner.prepared import PreparedRun
from tauproxy.runner.thread_executor import ThreadExecutor


def check_executor(config: RunConfig) -> None:
    """Fail now if the executor cannot run here (the install hint before the progress bar starts,
    not after)."""
    if config.executor == "ray":
        from tauproxy.runner.ray_executor import import_ray

        import_ray()


def open_executor(run: PreparedRun, transport: Transport) -> TrialExecutor[Any]:
    """The run's executor, ready to take trials; the caller closes it."""
    match run.config.executor:
        case "thread":
            return ThreadExecutor(run, transport)
        case "ray":
            from tauproxy.runner.ray_executor import RayExecutor

            return RayExecutor.start(run, transport)
        case other:
            assert_never(other)
