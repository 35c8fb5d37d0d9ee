"""τ²-bench's leaderboard as the installed package defines it: which domains it ranks, which tasks a
domain's submission must hold, the public checks `tau2 submit verify-trajs` runs, and the scores and
`submission.json` that `tau2 submit prepare` would compute.

Everything here is τ²'s own code, called in-process, so a submission tauproxy prepares is checked and
scored exactly as `tau2 submit validate` checks and scores it. tauproxy adds only what τ²'s prepare
asks interactively (the submitter's name and organization) as arguments.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from tauproxy.tau2bench.peer import load_tau2

# The domains `tau2.scripts.leaderboard.submission.Results` has a field for.
LEADERBOARD_DOMAINS: tuple[str, ...] = ("airline", "retail", "telecom")
# The split τ²'s public verification compares a submission's tasks with (verify_trajectories_public).
LEADERBOARD_SPLIT = "base"
PASS_KS: tuple[int, ...] = (1, 2, 3, 4)


@dataclass(frozen=True)
class DomainScore:
    """One domain's line of a submission: pass^k in percent (None past the run's trials) and the mean
    agent cost per trajectory in USD (None when unknown)."""

    domain: str
    pass_percent: dict[int, float | None]
    agent_cost: float | None


@dataclass(frozen=True)
class Submitter:
    """What τ²'s `submit prepare` asks at its prompts."""

    model_name: str
    organization: str
    email: str
    contact_name: str | None = None
    github: str | None = None
    is_new: bool = False


@dataclass(frozen=True)
class Methodology:
    evaluation_date: date | None
    tau2_version: str
    user_simulator: str | None
    notes: str


def base_task_ids(domain: str) -> list[str]:
    """The ids of the tasks a submission for `domain` must hold, in τ²'s order."""
    load_tau2()
    from tau2.registry import registry

    return [str(task.id) for task in registry.get_tasks_loader(domain)(LEADERBOARD_SPLIT)]


def public_check_problems(path: Path) -> list[str]:
    """What τ²'s public trajectory verification finds wrong with one results file; [] when it passes."""
    load_tau2()
    from tau2.scripts.leaderboard.verify_trajectories_public import check_format, check_num_trials, check_tasks

    results, loaded, error = check_format(path)
    if not loaded or results is None:
        return [error]
    problems = []
    for check in (check_tasks, check_num_trials):
        passed, message = check(results)
        if not passed:
            problems.append(message)
    return problems


def domain_score(path: Path) -> DomainScore:
    """A results file scored by τ²'s own metrics, as its `submit prepare` scores it."""
    load_tau2()
    from tau2.data_model.simulation import Results
    from tau2.metrics.agent_metrics import compute_metrics

    with contextlib.redirect_stdout(io.StringIO()):  # τ²'s loader may print progress
        results = Results.load(path)
    metrics = compute_metrics(results)
    passes = {k: _percent(metrics.pass_hat_ks.get(k)) for k in PASS_KS}
    return DomainScore(results.info.environment_info.domain_name, passes, _number(metrics.avg_agent_cost))


def submission_json(scores: list[DomainScore], submitter: Submitter, methodology: Methodology, today: date) -> str:
    """`submission.json` as τ²'s own Submission model writes it (its schema validates every field)."""
    load_tau2()
    from tau2.scripts.leaderboard import submission as schema

    by_domain: dict[str, Any] = {
        score.domain: schema.DomainResults(
            pass_1=score.pass_percent[1],
            pass_2=score.pass_percent[2],
            pass_3=score.pass_percent[3],
            pass_4=score.pass_percent[4],
            cost=score.agent_cost,
        )
        for score in scores
    }
    document = schema.Submission(
        model_name=submitter.model_name,
        organization=submitter.organization,
        submission_date=today,
        contact_info=schema.ContactInfo(email=submitter.email, name=submitter.contact_name, github=submitter.github),
        results=schema.Results(**by_domain),
        is_new=submitter.is_new,
        methodology=schema.Methodology(
            evaluation_date=methodology.evaluation_date,
            tau2_bench_version=methodology.tau2_version,
            user_simulator=methodology.user_simulator,
            notes=methodology.notes,
        ),
    )
    return str(document.model_dump_json(indent=2, exclude_none=True)) + "\n"


def submission_file_names() -> tuple[str, str]:
    """The submission file's name and the trajectories directory's, as τ²'s validate looks for them."""
    load_tau2()
    from tau2.scripts.leaderboard.submission import SUBMISSION_FILE_NAME, TRAJECTORY_FILES_DIR_NAME

    return SUBMISSION_FILE_NAME, TRAJECTORY_FILES_DIR_NAME


def _percent(value: Any) -> float | None:
    number = _number(value)
    return None if number is None else number * 100


def _number(value: Any) -> float | None:
    # pandas gives NaN for a mean over nothing (no cost recorded): unknown, not a number.
    if value is None:
        return None
    number = float(value)
    return None if number != number else number
