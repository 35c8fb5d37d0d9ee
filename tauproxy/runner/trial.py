"""One trial of one task, run by the domain's source (tauproxy/sources): the executors' one entry point."""

from __future__ import annotations

from tauproxy.data_model.result import SimulationRun
from tauproxy.domain.pack import DomainPack
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport
from tauproxy.runner.config import RunConfig
from tauproxy.sources.protocol import TrialSpec
from tauproxy.sources.registry import source_for_domain

__all__ = ["TrialSpec", "run_trial"]


def run_trial(
    spec: TrialSpec, pack: DomainPack, config: RunConfig, transport: Transport, pricing: Pricing
) -> SimulationRun:
    return source_for_domain(config.domain).run_trial(spec, pack, config, transport, pricing)
