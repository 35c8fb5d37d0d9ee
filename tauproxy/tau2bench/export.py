"""What a `tau2/` run's export in τ²-bench's results shape takes from the installed package.

Our results keep τ²'s tasks in our task model (fields we do not model are dropped) and no policy or
tool definitions. `report --format tau2` of a `tau2/` run writes them back as τ² has them: the
original tasks, the environment's policy and tool signatures (`Environment.get_info`, as `tau2 run`
builds its Info), read at export time from the installed package. The export goes to the user's
disk, never into the repository.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tauproxy.tau2bench.domain import load_catalog
from tauproxy.tau2bench.environments import environment_factory


@dataclass(frozen=True)
class Tau2Export:
    """τ²'s own pieces of a results file for one domain: environment info and task dumps by id."""

    environment_info: dict[str, Any]
    tasks: dict[str, dict[str, Any]]
    agent_implementation: str
    user_implementation: str


def tau2_export(domain: str, solo: bool) -> Tau2Export:
    catalog = load_catalog(domain)
    environment = environment_factory(catalog.domain.domain)()
    info = environment.get_info(include_tool_info=True).model_dump(mode="json")
    return Tau2Export(
        environment_info=info,
        tasks={str(task_id): task.model_dump(mode="json") for task_id, task in catalog.tasks.items()},
        # The implementations trial.py hands τ²'s run_task.
        agent_implementation="llm_agent_solo" if solo else "llm_agent",
        user_implementation="dummy_user" if solo else "user_simulator",
    )
