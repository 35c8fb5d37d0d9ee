"""Results as a report sees them: the results plus where they came from.

A report can read a tauproxy run, a τ²-bench simulations file, or several merged. What differs is
provenance, so it rides beside the results instead of changing the results model every run writes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tauproxy.data_model.result import Results

Origin = Literal["tauproxy", "tau2", "merged"]


class SourcedResults(Results):
    origin: Origin = "tauproxy"
    sources: list[str] = Field(default_factory=list)
    # Task order as the source file listed it, including tasks whose definition did not validate
    # (a τ²-bench file may carry task fields we do not model); None: the order of `tasks`.
    task_ids: list[str] | None = None
    notes: list[str] = Field(default_factory=list)


def task_order(results: Results) -> list[str]:
    if isinstance(results, SourcedResults) and results.task_ids is not None:
        return list(results.task_ids)
    return [task.id for task in results.tasks]


def sources_of(results: Results) -> list[str]:
    return list(results.sources) if isinstance(results, SourcedResults) else []


def notes_of(results: Results) -> list[str]:
    return list(results.notes) if isinstance(results, SourcedResults) else []


def origin_of(results: Results) -> Origin:
    return results.origin if isinstance(results, SourcedResults) else "tauproxy"
