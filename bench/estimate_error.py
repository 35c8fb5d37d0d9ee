"""How close `tauproxy estimate` gets to what a run then costs, measured on held-out runs.

    .venv/bin/python bench/estimate_error.py              (about 3 minutes of CPU; the figures)
    .venv/bin/python bench/estimate_error.py --quick      (20 cases a pack: for development only)
    .venv/bin/python bench/estimate_error.py --cases 100 --synthetic

Offline, in-process, on every shipped pack (mock, airline, retail, telecom), with the scripted models
(`scripted/oracle?error_rate=0.2` and `scripted/user`; the judge where a task has NL assertions)
priced by `cassettes/demo-prices.json` (as gpt-4.1 / gpt-4.1-mini), so every call has a cost.

1. Record: each pack, every task x --trials trials (4), into a cassette; the run is the ground truth.
2. Covered plan: `estimate` of the first 10 tasks of that plan with the cassette, without and with
   the run as history: it must predict 0 live calls and $0 (the cassette holds every call).
3. Prior: `estimate` with no history and no cassette, for every task x 2 trials, against the
   recorded cost of trials 0 and 1 (goal: within 1.5x). Also for two other agents, each recorded for
   it: `scripted/oracle` with no slips and error_rate=0.5, whose trials end early; the prior reads
   the share of actions an agent performs from its typed model options, and all three are held to
   the goal.
4. p90 coverage on held-out runs, --cases random cases a pack (the estimate's own history path,
   `_from_history`, the code `estimate --history` runs, on the recorded trials):
   - unseen tasks: a pilot of a quarter of the tasks (at least 3) x 2 trials is the history; the
     plan is the other tasks x 2 trials, whose recorded cost is the actual;
   - new trials: 2 random trials of every task are the history; the plan is the same tasks' 2
     other trials.
   A case is covered when the actual cost is at most the p90 (goal: at least 90% of cases).
   The p50's error is printed too.
`--synthetic` adds the former synthetic check of the sampler alone (populations of task sizes).
Prints the raw numbers, then RATIO lines.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from _common import BASE_ENV, REPO, print_machine, workdir

DOMAINS = ("mock", "airline", "retail", "telecom")
AGENT = "scripted/oracle?error_rate=0.2"
OTHER_AGENTS = ("scripted/oracle", "scripted/oracle?error_rate=0.5")
PRICES = REPO / "cassettes" / "demo-prices.json"


def config_for(domain: str, agent: str, trials: int, save_to: Path | None, cassette: Path | None):  # type: ignore[no-untyped-def]
    from tauproxy.engine.llm_config import LLMConfig
    from tauproxy.runner.config import RunConfig

    return RunConfig(
        domain=domain,
        agent=LLMConfig(model=agent),
        user=LLMConfig(model="scripted/user"),
        num_trials=trials,
        prices=PRICES,
        save_to=save_to,
        cassette=cassette,
    )


def first_tasks(domain: str, n: int) -> set[str]:
    from tauproxy.domain.pack import load_pack

    return {task.id for task in load_pack(domain).tasks[:n]}


def trial_costs(results) -> dict[tuple[str, int], float]:  # type: ignore[no-untyped-def]
    return {(sim.task_id, sim.trial): sum(call.cost_usd or 0.0 for call in sim.calls) for sim in results.simulations}


def prior_ratio(domain: str, agent: str, tmp: Path, results=None) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(prior p50, actual) for every task x 2 trials of `agent`: trials 0 and 1 of `results` when given,
    else a run made for it."""
    from tauproxy.runner.estimate import estimate
    from tauproxy.runner.run import execute

    config = config_for(domain, agent, 2, tmp / f"prior-{domain}-{agent.replace('/', '-').replace('?', '-')}", None)
    if results is None:
        results = execute(config).results
    actual = sum(cost for (_, trial), cost in trial_costs(results).items() if trial < 2)
    prior = estimate(config.model_copy(update={"save_to": None}), [], None)
    assert prior.live_cost_p50 is not None
    return prior.live_cost_p50, actual


def held_out_cases(domain: str, results, trials: int, cases: int, seed: int) -> list[tuple[str, float, float, float]]:  # type: ignore[no-untyped-def]
    """(kind, actual, p50, p90) per case."""
    from tauproxy.runner.estimate import _Coster, _from_history, _PastCall, _PastTrial
    from tauproxy.runner.run import prepare

    plan = config_for(domain, AGENT, trials, None, None)
    run = prepare(plan, preflight=False)
    coster = _Coster(plan, run.pricing)
    costs = trial_costs(results)
    past_of = {
        (sim.task_id, sim.trial): _PastTrial(
            sim.task_id, [_PastCall(c.role, c.model, c.usage) for c in sorted(sim.calls, key=lambda c: c.index)]
        )
        for sim in results.simulations
    }
    tasks = list(dict.fromkeys(spec.task.id for spec in run.specs))
    rng = np.random.default_rng(seed)
    found = []
    for case in range(cases):
        if case % 2 == 0:
            kind = "unseen tasks"
            order = rng.permutation(len(tasks))
            pilot = {tasks[i] for i in order[: max(3, len(tasks) // 4)]}
            history = [(t, j) for t in pilot for j in (0, 1)]
            planned = [(t, j) for t in tasks if t not in pilot for j in (0, 1)]
        else:
            kind = "new trials"
            history, planned = [], []
            for t in tasks:
                order = rng.permutation(trials)
                history += [(t, int(j)) for j in order[:2]]
                planned += [(t, int(j)) for j in order[2:4]]
        wanted = set(planned)
        specs = [spec for spec in run.specs if (spec.task.id, spec.trial) in wanted]
        past = [past_of[key] for key in history if past_of[key].calls]
        est = _from_history(specs, past, {}, coster, seed=case, self_check=False)
        actual = sum(costs[key] for key in planned)
        assert est.live_cost_p50 is not None and est.live_cost_p90 is not None
        found.append((kind, actual, est.live_cost_p50, est.live_cost_p90))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--cases", type=int, default=100, help="held-out cases per pack")
    parser.add_argument("--quick", action="store_true", help="20 held-out cases a pack (not for the figures)")
    parser.add_argument("--synthetic", action="store_true", help="also the synthetic sampler check")
    parser.add_argument("--cov-reps", type=int, default=200, help="populations per synthetic cell")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.cases = 20
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = BASE_ENV["LITELLM_LOCAL_MODEL_COST_MAP"]
    from tauproxy.runner.estimate import estimate
    from tauproxy.runner.run import execute

    print_machine("estimate_error")
    tmp = workdir("estimate", args.keep)
    recorded = {}
    covered_ok = True
    for domain in DOMAINS:
        started = time.perf_counter()
        config = config_for(domain, AGENT, args.trials, tmp / f"run-{domain}", tmp / f"cassette-{domain}")
        results = execute(config).results
        recorded[domain] = results
        calls = sum(len(sim.calls) for sim in results.simulations)
        print(
            f"recorded {domain}: {len(results.simulations)} trials, {calls} calls, "
            f"${sum(trial_costs(results).values()):.4f} ({time.perf_counter() - started:.1f} s)",
            flush=True,
        )
        # The first 10 tasks' trials: the probe replays each planned trial, as long as the run took.
        plan = config.model_copy(update={"save_to": None, "num_tasks": 10})
        calls = sum(len(sim.calls) for sim in results.simulations if sim.task_id in first_tasks(domain, 10))
        for history in ([], [tmp / f"run-{domain}"]):
            est = estimate(plan, history, plan.cassette)
            live = sum(role.calls_p90 for role in est.roles.values())
            ok = live == 0 and est.live_cost_p50 == 0 and est.live_cost_p90 == 0 and est.replayed_calls == calls
            covered_ok &= ok
            print(
                f"  covered plan, {'history' if history else 'prior'}: live calls p90 {live:.0f}, live cost p50 "
                f"${est.live_cost_p50} p90 ${est.live_cost_p90}, replayed {est.replayed_calls} of {calls} calls "
                f"(saves ${est.replayed_cost:.4f}) {'PASS' if ok else 'FAIL'}",
                flush=True,
            )

    print("\nno-history prior against the actual cost (every task x 2 trials):")
    print("| pack | agent | prior p50 | actual | prior / actual |")
    print("| --- | --- | --- | --- | --- |")
    ratios: dict[str, list[float]] = {}
    for domain in DOMAINS:
        for agent in (AGENT, *OTHER_AGENTS):
            prior, actual = prior_ratio(domain, agent, tmp, recorded[domain] if agent == AGENT else None)
            ratios.setdefault(agent, []).append(prior / actual)
            print(f"| {domain} | `{agent}` | ${prior:.4f} | ${actual:.4f} | {prior / actual:.2f} |", flush=True)

    print(f"\np90 coverage on held-out runs ({args.cases} cases a pack, {AGENT}):")
    print("| pack | cases | unseen tasks: covered | new trials: covered | p50 error, median (min, max) |")
    print("| --- | --- | --- | --- | --- |")
    every = []
    for domain in DOMAINS:
        started = time.perf_counter()
        cases = held_out_cases(domain, recorded[domain], args.trials, args.cases, seed=len(domain))
        every += cases
        by_kind = {
            kind: float(np.mean([actual <= p90 for k, actual, _, p90 in cases if k == kind]))
            for kind in ("unseen tasks", "new trials")
        }
        errors = [(p50 - actual) / actual for _, actual, p50, _ in cases]
        print(
            f"| {domain} | {len(cases)} | {by_kind['unseen tasks']:.3f} | {by_kind['new trials']:.3f} | "
            f"{100 * float(np.median(errors)):+.1f}% ({100 * min(errors):+.1f}%, {100 * max(errors):+.1f}%) | "
            f"({time.perf_counter() - started:.1f} s)",
            flush=True,
        )
    coverage = float(np.mean([actual <= p90 for _, actual, _, p90 in every]))
    print(
        f"\nRATIO estimate_covered_plan: live calls and $ of a plan the cassette holds = 0 on every pack, "
        f"with and without history: {'PASS' if covered_ok else 'FAIL'}"
    )
    print(
        f"RATIO estimate_p90_coverage: covered/cases = {coverage:.3f} over {len(every)} held-out cases "
        f"(goal >= 0.90): {'PASS' if coverage >= 0.9 else 'FAIL'}"
    )
    goal = [r for agent in (AGENT, *OTHER_AGENTS) for r in ratios[agent]]
    within_1_5x = min(goal) >= 1 / 1.5 and max(goal) <= 1.5
    print(
        f"RATIO estimate_prior: prior/actual = {min(goal):.2f}-{max(goal):.2f} over every pack for {AGENT}, "
        f"{' and '.join(OTHER_AGENTS)} (goal within 1.5x, i.e. 0.67-1.5): {'PASS' if within_1_5x else 'FAIL'}"
    )
    if args.synthetic:
        from estimate_synthetic import coverage_report

        coverage_report(args.cov_reps)


if __name__ == "__main__":
    main()
