"""Results as every command reads them: the results plus where they came from.

A command can be pointed at a tauproxy run, a τ²-bench simulations file, or (reports) several merged.
What differs is provenance, so it rides beside the results instead of changing the results model
every run writes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tauproxy.data_model.call import CallRole, Usage
from tauproxy.data_model.result import Results

Origin = Literal["tauproxy", "tau2", "merged"]


class ObservedCall(BaseModel):
    """A model call known only from the message it produced: τ²-bench keeps usage per message, not
    per call, and says nothing of its key or whether it was live. Enough to learn calls and tokens
    per trial from (`estimate --history`), never enough to count as a call record."""

    role: CallRole
    model: str
    usage: Usage


class SourcedResults(Results):
    origin: Origin = "tauproxy"
    sources: list[str] = Field(default_factory=list)
    # Task order as the source file listed it, including tasks whose definition did not validate
    # (a τ²-bench file may carry task fields we do not model); None: the order of `tasks`.
    task_ids: list[str] | None = None
    notes: list[str] = Field(default_factory=list)
    # What wrote the file, for headers ("τ²-bench (git 1a2b3c)"); None: tauproxy, named by the
    # RunInfo's version. Not a setting: it is never compared between runs.
    made_by: str | None = None
    # Per simulation id, the calls its messages show (τ²-bench files; see ObservedCall).
    observed_calls: dict[str, list[ObservedCall]] = Field(default_factory=dict)


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


def made_by_of(results: Results) -> str:
    if isinstance(results, SourcedResults) and results.made_by is not None:
        return results.made_by
    engine = results.info.engine
    return f"tauproxy {results.info.tauproxy_version}" + (f" on {engine}" if engine else "")


def observed_calls_of(results: Results) -> dict[str, list[ObservedCall]]:
    return dict(results.observed_calls) if isinstance(results, SourcedResults) else {}
