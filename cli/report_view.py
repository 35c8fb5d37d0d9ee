"""Renders a report summary as rich tables."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from tauproxy_cli.output import out_console


def money(value: float | None, unknown_calls: int = 0) -> str:
    if value is None:
        return "unknown"
    text = f"${value:.4f}"
    return f"{text} + {unknown_calls} unknown" if unknown_calls else text


def print_summary(summary: dict[str, Any], saved_to: str | None) -> None:
    console = out_console
    models = summary["models"]
    console.print(
        f"[bold]{summary['domain']}[/]  agent [cyan]{models['agent']['llm']}[/]  user [cyan]{models['user']['llm']}[/]"
        f"  judge [cyan]{models['judge']['llm']}[/]  tauproxy {summary['tauproxy_version']}"
    )
    scores = Table(title="pass^k", show_edge=False)
    for k in summary["pass_hat_k"]:
        scores.add_column(f"pass^{k}", justify="right")
    scores.add_column("avg reward", justify="right")
    scores.add_row(*[f"{v:.3f}" for v in summary["pass_hat_k"].values()], f"{summary['avg_reward']:.3f}")
    console.print(scores)
    console.print(
        f"{summary['num_tasks']} tasks x {summary['num_trials']} trials; terminations: "
        + ", ".join(f"{k} {v}" for k, v in summary["termination_reasons"].items())
    )
    cost = summary["cost"]
    calls = summary["calls"]
    console.print(
        f"calls: {calls['live']} live, {calls['replayed']} replayed   "
        f"cost: live {money(cost['live_usd'], cost['live']['unknown_price_calls'])}, "
        f"replayed (saved) {money(cost['replayed_usd'], cost['replayed']['unknown_price_calls'])}"
    )
    console.print(f"prices: {summary['price_source']}")
    if saved_to:
        console.print(f"results: {saved_to}/results.json")
