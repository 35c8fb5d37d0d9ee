"""Builds the transport stack for a run: the provider router, under a cassette layer when asked."""

from __future__ import annotations

from tauproxy.domain.pack import DomainPack
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.priced import PricedTransport
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.router import ProviderRouter
from tauproxy.proxy.transport import Transport
from tauproxy.runner.config import RunConfig


def build_transport(config: RunConfig, pack: DomainPack, pricing: Pricing | None = None) -> Transport:
    """The stack, pricing every answer once (proxy/priced.py): under the cassette layer, or on top
    of the router when there is none."""
    router = ProviderRouter({task.id: task for task in pack.tasks})
    pricing = pricing or Pricing.from_file(config.prices)
    if config.cassette is None or config.record_mode == RecordMode.OFF:
        return PricedTransport(router, pricing)
    from tauproxy.proxy.recorder import over_cassette

    return over_cassette(config.cassette, config.record_mode, router, pricing)


def transport_warnings(transport: Transport) -> list[str]:
    """Problems found while opening the cassette (garbled lines are skipped, never fatal)."""
    cassette = getattr(transport, "cassette", None)
    problems = getattr(cassette, "problems", None) or []
    return [f"cassette line skipped: {problem}" for problem in problems]


def replays_only(config: RunConfig, transport: Transport) -> bool:
    """Whether no call through `transport` (build_transport's for `config`) can reach a provider: its
    cassette layer's mode, as resolved when the cassette opened, is a strict replay (`replay`, or
    `once` over a recorded cassette: proxy/modes.py)."""
    if config.cassette is None or config.record_mode is RecordMode.OFF:
        return False  # no cassette layer (and no need to import it to say so)
    from tauproxy.proxy.recorder import CassetteTransport

    return isinstance(transport, CassetteTransport) and transport.mode is RecordMode.REPLAY
