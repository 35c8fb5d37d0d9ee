"""`tauproxy submit prepare`: a τ²-bench leaderboard submission from tauproxy runs of `tau2/` domains
and from τ²'s own results files.

What τ²'s submission takes (tauproxy/tau2bench/leaderboard.py): one results file per ranked domain in
`trajectories/`, each holding every task of the domain's base split run the same number of times, all
with one agent and one user simulator, and `submission.json` with the scores τ²'s own metrics give. A
tauproxy run is written in τ²'s results shape (`report --format tau2`, reports/tau2.py); a τ² file is
copied byte for byte. Nothing is written unless every input can be submitted: the first input that
cannot is refused with one line saying what is missing (ConfigError).

tauproxy adds the instrument disclosure τ²'s prepare does not ask for: `disclosure.json` beside
`submission.json` (agent, user and judge models with their arguments, seeds, trials, the tauproxy and
τ² versions, and per domain how many calls were live, shared and replayed), summed up in the
submission's methodology notes.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tauproxy.data_model.result import ModelInfo, TerminationReason
from tauproxy.errors import ConfigError
from tauproxy.redact import redact_llm_args
from tauproxy.reports.tau2 import to_tau2
from tauproxy.results.load import load_any_results, results_file_of
from tauproxy.results.provenance import SourcedResults
from tauproxy.tau2bench.leaderboard import (
    LEADERBOARD_DOMAINS,
    LEADERBOARD_SPLIT,
    DomainScore,
    Methodology,
    Submitter,
    base_task_ids,
    domain_score,
    public_check_problems,
    submission_file_names,
    submission_json,
)
from tauproxy.tau2bench.peer import PREFIX, installed_version
from tauproxy.version import __version__

DISCLOSURE_FILE = "disclosure.json"
# Agents and users τ²'s leaderboard does not rank: an oracle agent, and runs without a user simulator.
UNRANKED_AGENTS = {"llm_agent_gt": "the ground-truth agent", "llm_agent_solo": "a solo agent (no user simulator)"}
UNRANKED_USERS = {"dummy_user": "the dummy user (no user simulator)"}
MAX_LISTED = 5


class RoleDisclosure(BaseModel):
    llm: str
    llm_args: dict[str, Any]
    implementation: str | None = None


class DomainDisclosure(BaseModel):
    """How one domain's trajectories were made: what the submission's reader cannot see in them."""

    domain: str
    source: str
    made_by: str
    agent: RoleDisclosure
    user: RoleDisclosure
    judge: RoleDisclosure
    num_trials: int
    seed: int
    trial_seeds: list[int]
    max_steps: int
    max_errors: int
    tauproxy_version: str | None
    tau2_version: str
    engine: str | None
    record_mode: str | None
    cassette: str | None
    price_source: str | None
    # Model calls behind the trajectories by where their answers came from (None: the file does not
    # say, as for τ²'s own files).
    calls: dict[str, int] | None


class Disclosure(BaseModel):
    tauproxy_submit_version: str
    domains: list[DomainDisclosure]


@dataclass(frozen=True)
class PreparedSubmission:
    out: Path
    scores: list[DomainScore]
    disclosure: Disclosure


@dataclass(frozen=True)
class _Input:
    path: Path
    domain: str
    results: SourcedResults


def prepare_submission(paths: list[Path], out: Path, submitter: Submitter, today: date) -> PreparedSubmission:
    """Check every input, then write the submission into `out` (which must not hold anything yet)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out}: already exists and is not an empty directory; name a new one")
    inputs = [_checked_input(path) for path in paths]
    _check_one_per_domain(inputs)
    _check_one_agent(inputs)
    submission_file, trajectories_dir = submission_file_names()
    out.parent.mkdir(parents=True, exist_ok=True)
    # Written beside `out` and renamed into place: a refused or interrupted prepare leaves nothing.
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (staging / trajectories_dir).mkdir()
        scores = [_write_trajectories(entry, staging / trajectories_dir) for entry in inputs]
        disclosure = Disclosure(
            tauproxy_submit_version=_tauproxy_version(), domains=[_disclosure(entry) for entry in inputs]
        )
        first = inputs[0].results
        methodology = Methodology(
            evaluation_date=_evaluation_date(inputs),
            tau2_version=installed_version(),
            user_simulator=first.info.user_info.llm,
            notes=_notes(disclosure),
        )
        (staging / submission_file).write_text(submission_json(scores, submitter, methodology, today), encoding="utf-8")
        (staging / DISCLOSURE_FILE).write_text(disclosure.model_dump_json(indent=2) + "\n", encoding="utf-8")
        if out.exists():
            out.rmdir()  # empty, checked above
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return PreparedSubmission(out, scores, disclosure)


def _checked_input(path: Path) -> _Input:
    results = load_any_results(path)
    domain = _leaderboard_domain(path, results)
    _check_ranked_roles(path, results)
    _check_tasks_and_trials(path, domain, results)
    return _Input(path, domain, results)


def _leaderboard_domain(path: Path, results: SourcedResults) -> str:
    name = results.info.domain
    if results.origin == "tauproxy" and not name.startswith(PREFIX):
        raise ConfigError(
            f"{path}: {name!r} is one of tauproxy's own domains; τ²-bench's leaderboard takes runs of "
            + ", ".join(PREFIX + d for d in LEADERBOARD_DOMAINS)
        )
    domain, _, split = name.removeprefix(PREFIX).partition(":")
    if domain not in LEADERBOARD_DOMAINS:
        raise ConfigError(f"{path}: τ²-bench's leaderboard ranks {', '.join(LEADERBOARD_DOMAINS)}, not {domain!r}")
    if split and split != LEADERBOARD_SPLIT:
        raise ConfigError(f"{path}: ran split {split!r}; the leaderboard takes the {LEADERBOARD_SPLIT!r} split")
    return domain


def _check_ranked_roles(path: Path, results: SourcedResults) -> None:
    info = results.info
    if info.solo:
        raise ConfigError(f"{path}: a solo run (no user simulator); the leaderboard ranks dual-control runs")
    for role, model, unranked in (
        ("agent", info.agent_info, UNRANKED_AGENTS),
        ("user", info.user_info, UNRANKED_USERS),
    ):
        what = unranked.get(model.implementation or "")
        if what is not None:
            raise ConfigError(f"{path}: the {role} is {what}; the leaderboard ranks llm_agent with user_simulator")


def _check_tasks_and_trials(path: Path, domain: str, results: SourcedResults) -> None:
    wanted = base_task_ids(domain)
    scored = Counter(
        sim.task_id for sim in results.simulations if sim.termination_reason != TerminationReason.INFRASTRUCTURE_ERROR
    )
    failed = Counter(
        sim.task_id for sim in results.simulations if sim.termination_reason == TerminationReason.INFRASTRUCTURE_ERROR
    )
    missing = [task_id for task_id in wanted if task_id not in scored and task_id not in failed]
    if missing:
        raise ConfigError(
            f"{path}: {len(missing)} of the {len(wanted)} tasks of {PREFIX}{domain}'s {LEADERBOARD_SPLIT} split "
            f"were not run ({_listed(missing)}); a submission runs every task of the split"
        )
    extra = sorted((set(scored) | set(failed)) - set(wanted))
    if extra:
        raise ConfigError(
            f"{path}: holds tasks outside {PREFIX}{domain}'s {LEADERBOARD_SPLIT} split ({_listed(extra)})"
        )
    trials = results.info.num_trials
    short = [task_id for task_id in wanted if scored[task_id] != trials]
    if short:
        errors = sum(failed.values())
        cause = (
            f"{errors} trials ended in an infrastructure error: run the same command again to re-run them"
            if errors
            else "every task needs the same number of trials"
        )
        first = short[0]
        raise ConfigError(
            f"{path}: {len(short)} tasks lack trials (task {first} has {scored[first]} of {trials}); {cause}"
        )


def _check_one_per_domain(inputs: list[_Input]) -> None:
    seen: dict[str, Path] = {}
    for entry in inputs:
        if entry.domain in seen:
            raise ConfigError(
                f"{entry.path}: {entry.domain} is given twice (also {seen[entry.domain]}); give one run per domain"
            )
        seen[entry.domain] = entry.path


def _check_one_agent(inputs: list[_Input]) -> None:
    first = inputs[0]
    for entry in inputs[1:]:
        for role in ("agent", "user"):
            theirs, ours = _role(first.results, role), _role(entry.results, role)
            if (theirs.llm, theirs.llm_args) != (ours.llm, ours.llm_args):
                raise ConfigError(
                    f"{entry.path}: its {role} is {ours.llm} {json.dumps(ours.llm_args, sort_keys=True)}, "
                    f"{first.path}'s is {theirs.llm} {json.dumps(theirs.llm_args, sort_keys=True)}; "
                    "a submission is one agent and one user simulator"
                )


def _role(results: SourcedResults, role: str) -> ModelInfo:
    return results.info.agent_info if role == "agent" else results.info.user_info


def _write_trajectories(entry: _Input, directory: Path) -> DomainScore:
    target = directory / f"{entry.domain}.json"
    if entry.results.origin == "tau2":
        _copy_without_secrets(results_file_of(entry.path), target)
    else:
        target.write_text(json.dumps(to_tau2(entry.results), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    problems = public_check_problems(target)
    if problems:
        raise ConfigError(f"{entry.path}: τ²-bench's own check refuses it: {'; '.join(problems)}")
    return domain_score(target)


def _copy_without_secrets(source: Path, target: Path) -> None:
    """τ²'s own file as τ² wrote it, byte for byte, unless its llm args hold a key or a header
    (`tau2 run` writes them as given): then rewritten with those left out, as tauproxy's runs are."""
    raw = source.read_bytes()
    document = json.loads(raw)
    info = document.get("info") or {}
    changed = False
    for role in ("agent_info", "user_info"):
        model = info.get(role)
        if isinstance(model, dict) and isinstance(model.get("llm_args"), dict):
            clean = redact_llm_args(model["llm_args"])
            if clean != model["llm_args"]:
                model["llm_args"], changed = clean, True
    if changed:
        target.write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    else:
        target.write_bytes(raw)


def _disclosure(entry: _Input) -> DomainDisclosure:
    info = entry.results.info
    tauproxy_run = entry.results.origin == "tauproxy"
    calls: Counter[str] | None = None
    if tauproxy_run:
        calls = Counter(call.source for sim in entry.results.simulations for call in sim.calls)
    return DomainDisclosure(
        domain=f"{PREFIX}{entry.domain}",
        source=str(entry.path),
        made_by=entry.results.made_by or f"tauproxy {info.tauproxy_version}",
        agent=_disclosed(info.agent_info),
        user=_disclosed(info.user_info),
        judge=_disclosed(info.judge_info),
        num_trials=info.num_trials,
        seed=info.seed,
        trial_seeds=info.trial_seeds,
        max_steps=info.max_steps,
        max_errors=info.max_errors,
        tauproxy_version=info.tauproxy_version if tauproxy_run else None,
        tau2_version=installed_version(),
        engine=info.engine,
        record_mode=info.record_mode,
        cassette=Path(info.cassette).name if info.cassette else None,
        price_source=info.price_source,
        calls={source: calls.get(source, 0) for source in ("live", "shared", "replay")} if calls is not None else None,
    )


def _disclosed(model: ModelInfo) -> RoleDisclosure:
    return RoleDisclosure(llm=model.llm, llm_args=model.llm_args, implementation=model.implementation)


def _notes(disclosure: Disclosure) -> str:
    parts = []
    for domain in disclosure.domains:
        calls = domain.calls
        how = (
            f"{calls['live']} live, {calls['shared']} shared, {calls['replay']} replayed calls"
            if calls is not None
            else "calls not recorded"
        )
        parts.append(f"{domain.domain}: {domain.made_by}, {domain.num_trials} trials, seed {domain.seed}, {how}")
    first = disclosure.domains[0]
    judge = f"; judge {first.judge.llm}" if first.judge.llm not in ("", "unknown") else ""
    return (
        f"Prepared by tauproxy {disclosure.tauproxy_submit_version}. Agent {first.agent.llm} "
        f"{json.dumps(first.agent.llm_args, sort_keys=True)}; user {first.user.llm} "
        f"{json.dumps(first.user.llm_args, sort_keys=True)}{judge}. " + "; ".join(parts) + f". See {DISCLOSURE_FILE}."
    )


def _evaluation_date(inputs: list[_Input]) -> date | None:
    stamps = [entry.results.timestamp for entry in inputs if entry.results.timestamp]
    if not stamps:
        return None
    try:
        return date.fromisoformat(max(stamps)[:10])
    except ValueError:
        return None


def _listed(ids: list[str]) -> str:
    shown = ", ".join(ids[:MAX_LISTED])
    return shown if len(ids) <= MAX_LISTED else f"{shown}, ... {len(ids) - MAX_LISTED} more"


def _tauproxy_version() -> str:
    return __version__
