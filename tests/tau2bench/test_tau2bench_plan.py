"""τ²-bench domains in tauproxy's engine: naming, install and version checks, seeds (no tau2 needed)."""

from __future__ import annotations

import random

import pytest

from tauproxy.errors import ConfigError
from tauproxy.tau2bench import peer
from tauproxy.tau2bench.bridge import TAU2_DEFAULT_LLM_ARGS, tau2_llm_args, tau2_model_name
from tauproxy.tau2bench.plan import check_tau2_run, tau2_trial_seeds


def test_seeds_are_tau2s() -> None:
    """tau2/run.py: random.seed(seed), then one random.randint(0, 1000000) per trial."""
    state = random.getstate()
    try:
        random.seed(300)
        expected = [random.randint(0, 1000000) for _ in range(5)]
    finally:
        random.setstate(state)
    assert tau2_trial_seeds(300, 5) == expected
    assert tau2_trial_seeds(300, 2) == [626729, 373753]  # what `tau2 run` 26.3 wrote with its default seed


@pytest.mark.parametrize(
    ("name", "domain", "split"),
    [("tau2/mock", "mock", "base"), ("tau2/telecom", "telecom", "base"), ("tau2/telecom:full", "telecom", "full")],
)
def test_domain_names(name: str, domain: str, split: str) -> None:
    parsed = peer.parse_domain(name)
    assert (parsed.domain, parsed.split) == (domain, split)
    assert peer.is_tau2_domain(name)


def test_unknown_domain_is_one_line() -> None:
    with pytest.raises(ConfigError, match="unknown τ²-bench domain 'nope'"):
        peer.parse_domain("tau2/nope")


def test_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peer, "_loaded", None)
    monkeypatch.setattr(peer, "is_installed", lambda: False)
    with pytest.raises(ConfigError) as caught:
        peer.load_tau2()
    assert str(caught.value) == peer.INSTALL_HINT and "pip install 'tauproxy[tau2]'" in str(caught.value)
    # A run says so first, before what its (default, scripted) user model cannot do.
    from tauproxy.engine.llm_config import LLMConfig
    from tauproxy.runner.config import RunConfig
    from tauproxy.runner.run import execute

    with pytest.raises(ConfigError) as caught:
        execute(RunConfig(domain="tau2/airline", agent=LLMConfig(model="openai/gpt-4.1")))
    assert str(caught.value) == peer.INSTALL_HINT


def test_unsupported_version_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"τ²-bench 1\.0\.1 is installed; .* checked against 26\.3"):
        peer.check_version("1.0.1")
    peer.check_version("26.3")


def test_what_a_tau2_run_cannot_do() -> None:
    ok = dict(
        agent_model="openai/gpt-4.1",
        user_model="openai/gpt-4.1",
        solo=False,
        custom_prompt=False,
        agent_impl=None,
        tasks_file=None,
        executor="thread",
    )
    check_tau2_run(**ok)  # type: ignore[arg-type]
    for change, message in [
        ({"agent_model": "scripted/oracle"}, "tauproxy's own task format"),
        ({"user_model": "scripted/user"}, "tauproxy's own task format"),
        ({"custom_prompt": True}, "τ²-bench's own prompt"),
        ({"executor": "dask"}, "thread or ray executor"),
        ({"agent_impl": "m:f"}, "τ²-bench's own agent"),
    ]:
        with pytest.raises(ConfigError, match=message):
            check_tau2_run(**{**ok, **change})  # type: ignore[arg-type]


def test_llm_args_as_tau2_run_gives_them() -> None:
    from tauproxy.engine.llm_config import LLMConfig

    # No args at all: tau2 run's default; args given replace it (connection settings never sent).
    assert tau2_llm_args(LLMConfig(model="m")) == {**TAU2_DEFAULT_LLM_ARGS, "num_retries": 3}
    assert tau2_llm_args(LLMConfig(model="m", args={"api_base": "http://x/v1"})) == {"num_retries": 3}
    assert tau2_model_name("openai/gpt-4.1") == "openai/gpt-4.1"
    assert tau2_model_name("anthropic/claude") == "openai/anthropic/claude"


def test_a_misspelt_domain_is_named_before_what_its_models_cannot_do() -> None:
    from tauproxy.engine.llm_config import LLMConfig
    from tauproxy.runner.config import RunConfig
    from tauproxy.runner.run import prepare

    # The default user model (scripted) cannot play a τ² domain either; the domain comes first.
    with pytest.raises(ConfigError, match="unknown τ²-bench domain 'airlines'"):
        prepare(RunConfig(domain="tau2/airlines", agent=LLMConfig(model="openai/gpt-4.1")), preflight=False)
