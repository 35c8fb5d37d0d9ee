"""Fail fast: check each configured model once, before the first trial, so a misconfiguration is one
line and exit 2 instead of a run whose every trial is an infrastructure error.

Checked, by model name:
    scripted/...  the name is a known scripted model
    local/...     the name is a known local model and the [local] extra imports
    anything else the name resolves to a litellm provider; an API key is given or in the environment;
                  and, when an api_base is given, the endpoint answers HTTP at all (any status will do:
                  a 401 or 404 still proves the address is right; a refused connection does not)
Not checked: a model's price. A name missing from the price map is normal (custom endpoints such as
`openai/<anything>` with an api_base); its cost is then unknown. Strict replay checks nothing: it
needs no key and no network, and goes live for nothing.
"""

from __future__ import annotations

from tauproxy.data_model.call import ConnectionSettings
from tauproxy.errors import ConfigError
from tauproxy.redact import redact_url

ENDPOINT_TIMEOUT_S = 5.0


def check_model(role: str, model: str, connection: ConnectionSettings, live: bool) -> None:
    """Raise a one-line ConfigError naming `role` (agent, user, judge) if `model` cannot be called.

    Without `live` (strict replay) only what needs neither a key nor the network is checked.
    """
    from tauproxy.proxy.router import LOCAL_PREFIX
    from tauproxy.proxy.scripted import PREFIX as SCRIPTED_PREFIX
    from tauproxy.proxy.scripted import parse_spec

    try:
        if model.startswith(SCRIPTED_PREFIX):
            parse_spec(model)
        elif model.startswith(LOCAL_PREFIX):
            from tauproxy.proxy.local import _llama_cpp, model_spec

            model_spec(model)
            if live:  # a replay of a local model needs no llama.cpp
                _llama_cpp()
        elif live:
            check_provider(model, connection)
    except ConfigError as exc:
        raise ConfigError(f"--{role}-llm {model}: {exc}") from None


def check_provider(model: str, connection: ConnectionSettings, key_hint: str = "pass api_key in the llm args") -> None:
    """A one-line ConfigError if litellm cannot place `model`, has no key for it, or cannot reach its
    api_base; `key_hint` says where else the caller could give a key."""
    from tauproxy.proxy.live import load_litellm

    litellm = load_litellm()
    try:
        litellm.get_llm_provider(model, api_base=connection.api_base)
    except Exception:
        raise ConfigError(
            "litellm cannot tell which provider serves this name; write it as provider/model "
            "(for example openai/gpt-4.1, or openai/NAME with an api_base for an OpenAI-compatible endpoint)"
        ) from None
    if connection.api_key is None:
        missing = litellm.validate_environment(model=model, api_base=connection.api_base).get("missing_keys") or []
        if missing:
            raise ConfigError(f"no API key: set {' or '.join(missing)} (or {key_hint})")
    if connection.api_base is not None:
        _check_endpoint(connection.api_base, connection.timeout)


def _check_endpoint(api_base: str, timeout: float | None) -> None:
    import httpx

    url = api_base.rstrip("/") + "/models"
    try:
        httpx.get(url, timeout=min(timeout or ENDPOINT_TIMEOUT_S, ENDPOINT_TIMEOUT_S))
    except httpx.HTTPError as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ConfigError(f"cannot reach {redact_url(api_base)} ({reason})") from None
