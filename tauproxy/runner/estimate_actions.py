"""How much of a task's expected actions a planned trial performs, read from the agent's model options.

The no-history prior (runner/estimate.py) counts calls per trial from a task's expected actions. An
agent that skips actions makes fewer calls and shorter conversations, and the plan can say so: a
scripted oracle's typed options (proxy/scripted.py, OracleOptions) state the share it skips
(`error_rate`) and whether it guides the user at all (`skip_user`). A model whose options say nothing
about it (a provider's, a local one) is taken to perform every action.
"""

from __future__ import annotations

from dataclasses import dataclass

from tauproxy.proxy.families import family_of
from tauproxy.proxy.scripted import OracleOptions, parse_spec


@dataclass(frozen=True)
class ActionShare:
    """The expected share of a task's actions a trial performs: the agent's own (`agent`), and the
    user's ones it talks the user through (`user`)."""

    agent: float = 1.0
    user: float = 1.0


EVERY_ACTION = ActionShare()


def action_share(agent_model: str, solo: bool = False) -> ActionShare:
    """The share the agent model's options promise; every action when they say nothing of it. In a
    solo run the agent holds the user's tools and performs their actions itself, so `skip_user`
    skips none of them."""
    if family_of(agent_model).name != "scripted":
        return EVERY_ACTION
    options = parse_spec(agent_model).options
    if not isinstance(options, OracleOptions):
        return EVERY_ACTION
    kept = 1.0 - options.error_rate  # each step is skipped with probability error_rate
    return ActionShare(agent=kept, user=0.0 if options.skip_user and not solo else kept)
