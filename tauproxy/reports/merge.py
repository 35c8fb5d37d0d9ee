"""Merge several runs of the same tasks into one report, trial by trial.

A trial is identified by (task_id, seed): the seed decides every sampled choice of a trial, so the
same pair in two files is the same trial (counted once) unless its outcome differs, which means
the files disagree about what happened and no honest merge exists. Typical use: 4 baseline trials
replayed from a cassette plus 4 new live trials with other seeds, reported as one 8-trial run.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from tauproxy.data_model.result import Results, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.errors import ConfigError
from tauproxy.results.provenance import (
    SourcedResults,
    made_by_of,
    notes_of,
    observed_calls_of,
    sources_of,
    task_order,
)


def merge_results(results: Sequence[Results], sources: list[str] | None = None) -> SourcedResults:
    """One Results holding every distinct trial; trials renumbered per task by (file order, trial).

    `sources` names each input in messages (file paths); it defaults to what the inputs recorded.
    """
    if not results:
        raise ConfigError("nothing to merge: no results given")
    names = sources or [", ".join(sources_of(r)) or f"input {i + 1}" for i, r in enumerate(results)]
    if len(names) != len(results):
        raise ConfigError(f"merge: {len(results)} results but {len(names)} source names")
    _check_same_domain(results, names)

    kept: dict[tuple[str, int], tuple[SimulationRun, str]] = {}
    for runs, name in zip((r.simulations for r in results), names, strict=True):
        for run in sorted(runs, key=lambda r: r.trial):
            key = (run.task_id, run.seed)
            if key not in kept:
                kept[key] = (run, name)
            elif not _same_outcome(kept[key][0], run):
                raise ConfigError(
                    f"task {run.task_id!r} seed {run.seed}: {kept[key][1]} and {name} hold different "
                    "outcomes (reward or messages) for the same trial; refusing to merge"
                )

    order = _task_order(results)
    by_task: OrderedDict[str, list[SimulationRun]] = OrderedDict((task_id, []) for task_id in order)
    # `kept` preserves insertion order, which is (file order, original trial) within each task.
    for run, _ in kept.values():
        by_task.setdefault(run.task_id, []).append(run)
    simulations = [_renumbered(run, trial) for group in by_task.values() for trial, run in enumerate(group)]
    first = results[0]
    seeds = list(OrderedDict.fromkeys(run.seed for run in simulations))
    info = first.info.model_copy(
        update={
            "num_trials": max((len(group) for group in by_task.values()), default=0),
            "trial_seeds": seeds,
        }
    )
    notes = [note for r in results for note in notes_of(r)]
    return SourcedResults(
        timestamp=first.timestamp,
        info=info,
        tasks=_tasks(results),
        simulations=simulations,
        origin="merged",
        sources=names,
        task_ids=list(by_task),
        notes=list(OrderedDict.fromkeys(notes + _differences(results, names))),
        made_by=made_by_of(first),
        # Keyed by simulation id, which renumbering keeps for foreign (uuid) ids; ours carry none.
        observed_calls={sim_id: calls for r in results for sim_id, calls in observed_calls_of(r).items()},
    )


def _same_outcome(a: SimulationRun, b: SimulationRun) -> bool:
    reward_a = a.reward_info.reward if a.reward_info else None
    reward_b = b.reward_info.reward if b.reward_info else None
    if reward_a != reward_b:
        return False
    return [m.model_dump() for m in a.messages] == [m.model_dump() for m in b.messages]


def _renumbered(run: SimulationRun, trial: int) -> SimulationRun:
    # Our ids are "task:trial"; keep foreign ids (τ² uses uuids) as they are.
    run_id = f"{run.task_id}:{trial}" if run.id == f"{run.task_id}:{run.trial}" else run.id
    return run.model_copy(update={"trial": trial, "id": run_id})


def _check_same_domain(results: Sequence[Results], names: list[str]) -> None:
    domains = {r.info.domain for r in results}
    if len(domains) > 1:
        listed = ", ".join(f"{name} ({r.info.domain})" for r, name in zip(results, names, strict=True))
        raise ConfigError(f"cannot merge runs of different domains: {listed}")


def _differences(results: Sequence[Results], names: list[str]) -> list[str]:
    """Settings that differ between merged runs: allowed, but the reader should know."""
    first = results[0].info
    notes: list[str] = []
    for result, name in zip(results[1:], names[1:], strict=True):
        info = result.info
        if info.domain_sha256 != first.domain_sha256:
            notes.append(f"{name}: domain content differs from {names[0]} (sha256 {info.domain_sha256[:12]})")
        for role in ("agent_info", "user_info", "judge_info"):
            if getattr(info, role).model_dump() != getattr(first, role).model_dump():
                notes.append(f"{name}: {role.removesuffix('_info')} model or args differ from {names[0]}")
    return notes


def _task_order(results: Sequence[Results]) -> list[str]:
    order: OrderedDict[str, None] = OrderedDict()
    for result in results:
        order.update((task_id, None) for task_id in task_order(result))
    return list(order)


def _tasks(results: Sequence[Results]) -> list[Task]:
    tasks: OrderedDict[str, Task] = OrderedDict()
    for result in results:
        for task in result.tasks:
            tasks.setdefault(task.id, task)
    return list(tasks.values())
