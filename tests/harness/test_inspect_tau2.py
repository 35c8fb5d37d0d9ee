"""Inspect AI's τ²-bench port (inspect-evals `tau2_airline`) through `tauproxy serve`, with no header.

Inspect sends no scope header and no seed, and its epochs send the byte-identical opening request
once per epoch to draw a sample each: serve's rule for unseeded requests (a fresh draw each, counted
per session; serve/identity.py) is what keeps them apart. Against a noisy stub model on 127.0.0.1
(tests/harness/noisy_upstream.py: the n-th identical request gets draw n):

- record 2 airline tasks x 2 epochs through serve in auto mode: every epoch is answered on its own
  (the stub drew each opening request twice, and the epochs' conversations differ);
- stop the upstream and replay through a replay server: 0 misses, nothing live, the same scores and
  the same conversations (per task, over its epochs: identical epochs are interchangeable);
- run again at once against the same replay server: 0 misses again (its first request, asking with
  nothing in flight for a draw past the recorded ones, begins a new session).

serve runs as a process (the promise is about serve); Inspect runs in this process (`inspect_ai.eval`)
with its task's defaults: on the Responses API (Inspect's default for OpenAI models), and again with
the model and the user role on chat completions (`-M responses_api=false`).
Measured with inspect-ai 0.3.285 and inspect-evals 0.26.0: 4 to 5 minutes per API on a 2-core box
shared with other test runs (importing Inspect alone took 18 s of wall time there, 4 s of CPU).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "serve"))
from noisy_upstream import NoisyUpstream
from serve_process import CLIENT_KEY, start_serve, write_upstream_map

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("inspect_ai") is None or importlib.util.find_spec("inspect_evals") is None,
        reason="needs the inspect extra (inspect-ai, inspect-evals)",
    ),
]

TASK_IDS = ["0", "1"]  # two airline tasks, picked by id (the task shuffles its samples by default)
EPOCHS = 2
UNREACHABLE = "http://127.0.0.1:9/v1"


def run_inspect(serve_url: str, log_dir: Path, api: str) -> Any:
    """`inspect eval inspect_evals/tau2_airline --epochs 2` against serve, in this process; with
    api "chat", `-M responses_api=false` for the model and the user role."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model
    from inspect_evals.tau2 import tau2_airline

    args: dict[str, Any] = {"responses_api": False} if api == "chat" else {}
    user = get_model("openai/stub-user", base_url=serve_url, api_key=CLIENT_KEY, **args)
    (log,) = inspect_eval(
        tau2_airline(),
        model="openai/stub-agent",
        model_base_url=serve_url,
        model_args=args,
        model_roles={"user": user},
        sample_id=TASK_IDS,
        epochs=EPOCHS,
        log_dir=str(log_dir),
        display="none",
        max_retries=0,
    )
    assert log.status == "success", log.error
    return log


def scores(log: Any) -> dict[str, list[str]]:
    """Each task's score values over its epochs (sorted: which epoch drew which sample is free)."""
    found: dict[str, list[str]] = defaultdict(list)
    for sample in log.samples:
        found[str(sample.id)] += [str(score.value) for score in sample.scores.values()]
    return {task: sorted(values) for task, values in found.items()}


def conversations(log: Any) -> dict[str, list[str]]:
    """Each task's epochs, each as the text of its user-simulator conversation."""
    found: dict[str, list[str]] = defaultdict(list)
    for sample in log.samples:
        found[str(sample.id)].append(json.dumps([message.text for message in sample.messages]))
    return {task: sorted(epochs) for task, epochs in found.items()}


def stats(root: str) -> dict[str, Any]:
    answer: dict[str, Any] = httpx.get(root + "/stats").json()
    return answer


@pytest.mark.parametrize("api", ["responses", "chat"])  # Inspect's default, and chat completions
def test_inspect_tau2_airline_records_replays_and_keeps_epochs_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, api: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CLIENT_KEY)
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "logs"))
    cassette = str(tmp_path / "cassette")
    stub = NoisyUpstream().start()
    try:
        routes = write_upstream_map(tmp_path / "u.json", {"*": {"model": "openai/{model}", "api_base": stub.url}})
        server = start_serve("--cassette", cassette, "--record-mode", "auto", "--upstream-map", str(routes))
        try:
            recorded = run_inspect(server.url, tmp_path / "record", api)
            live = stats(server.root)
        finally:
            assert server.stop() == 0, server.stdout_text()
    finally:
        stub.stop()

    # Every epoch drew its own samples: the opening request of each task reached the stub once per
    # epoch, and the epochs' conversations differ.
    openings = [count for count in stub.arrivals.values() if count > 1]
    assert len(openings) >= len(TASK_IDS) and set(openings) == {EPOCHS}
    assert (live["shared"], live["errors"]) == (0, 0) and live["live"] == len(stub.requests)
    recorded_conversations = conversations(recorded)
    assert all(len(set(epochs)) == EPOCHS for epochs in recorded_conversations.values())

    dead = write_upstream_map(tmp_path / "dead.json", {"*": {"model": "openai/{model}", "api_base": UNREACHABLE}})
    server = start_serve("--cassette", cassette, "--record-mode", "replay", "--upstream-map", str(dead))
    try:
        for attempt in range(2):  # the same replay server, run after run, at once
            replayed = run_inspect(server.url, tmp_path / f"replay{attempt}", api)
            assert scores(replayed) == scores(recorded)
            assert conversations(replayed) == recorded_conversations
            assert replayed.results.scores[0].metrics["accuracy"].value == (
                recorded.results.scores[0].metrics["accuracy"].value
            )
            served = stats(server.root)
            assert (served["misses"], served["live"], served["errors"]) == (0, 0, 0)
            assert served["hits"] == served["requests"] >= (attempt + 1) * len(TASK_IDS) * EPOCHS
    finally:
        assert server.stop() == 0, server.stdout_text()
