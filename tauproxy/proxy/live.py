"""Live calls through litellm. litellm is imported here, on the first live call, and nowhere else.

`LiteLLMTransport` answers in-process calls and `tauproxy serve`'s alike: the call carries where to
go (`connection`, and `upstream_model` when serve routes the name), and every provider failure
becomes one `ModelCallError` (see `model_call_error`).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from tauproxy.data_model.call import ModelCall
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.wire import normalise_response
from tauproxy.errors import ModelCallError
from tauproxy.proxy import own_servers
from tauproxy.redact import redact_text

_import_lock = threading.Lock()


def load_litellm() -> Any:
    with _import_lock:
        # Without the local map litellm fetches prices over the network at import and stalls offline.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        # litellm prints a "Give Feedback" banner to stdout on every error.
        litellm.suppress_debug_info = True
        return litellm


def litellm_completion(kwargs: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """One non-streaming litellm call: the response body as a dict and the latency in seconds.

    Provider exceptions propagate as litellm raised them; `model_call_error` maps them.
    """
    litellm = load_litellm()
    started = time.perf_counter()
    raw = litellm.completion(**kwargs)
    latency = time.perf_counter() - started
    return (raw.model_dump() if hasattr(raw, "model_dump") else dict(raw)), latency


def litellm_kwargs(call: ModelCall) -> dict[str, Any]:
    """The call's body plus where to send it; the only place connection settings meet a request."""
    connection = call.connection
    kwargs: dict[str, Any] = dict(call.wire)
    if call.upstream_model is not None:
        kwargs["model"] = call.upstream_model
    for name in ("api_base", "api_key", "api_version", "timeout", "num_retries", "extra_headers"):
        value = getattr(connection, name)
        if value is not None:
            kwargs[name] = value
    if connection.num_retries is not None:
        kwargs["max_retries"] = connection.num_retries  # the openai client's own retries too
    if "api_base" not in kwargs and _openai_model(str(kwargs["model"])) and _openai_base_is_ours():
        # litellm would read the variable an intercept set for its clients (proxy/own_servers.py).
        kwargs["api_base"] = OPENAI_DEFAULT_BASE
    return kwargs


# Where litellm looks for an OpenAI model's endpoint when a call names none, and its default.
OPENAI_BASE_ENV = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"


def _openai_base_is_ours() -> bool:
    return any(own_servers.is_ours(os.environ.get(name)) for name in OPENAI_BASE_ENV)


def _openai_model(model: str) -> bool:
    provider, slash, _ = model.partition("/")
    return provider == "openai" or not slash


def model_call_error(exc: Exception, model: str, secrets: tuple[str, ...]) -> ModelCallError:
    """A provider exception as a ModelCallError: its status, or a code when it has none."""
    litellm = load_litellm()
    message = redact_text(f"{model}: {type(exc).__name__}: {_one_line(str(exc))}", secrets)
    if isinstance(exc, litellm.Timeout):
        return ModelCallError(message, code="upstream_timeout")
    status = getattr(exc, "status_code", None)
    if isinstance(exc, litellm.APIConnectionError) or not isinstance(status, int) or not 400 <= status <= 599:
        # litellm files a refused connection under 500; it is a connection failure, not an answer.
        return ModelCallError(message, code="upstream_unreachable")
    return ModelCallError(message, status_code=status, retry_after=_retry_after(exc))


MAX_ERROR_CHARS = 400


def _one_line(text: str) -> str:
    """A provider error as one short line: litellm embeds whole tracebacks in some messages."""
    text = text.split("Traceback (most recent call last)")[0]
    text = " ".join(text.split())
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _retry_after(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
    except Exception:  # a provider SDK's stand-in response object; the header is a courtesy
        return None
    return str(value) if value is not None else None


class LiteLLMTransport:
    def complete(self, call: ModelCall) -> Completion:
        secrets = tuple(v for v in (call.connection.api_key, *(call.connection.extra_headers or {}).values()) if v)
        try:
            body, latency = litellm_completion(litellm_kwargs(call))
        except Exception as exc:
            raise model_call_error(exc, call.model, secrets) from None
        try:
            normalised = normalise_response(body)
        except ValueError as exc:
            raise ModelCallError(f"{call.model}: malformed response: {exc}", code="upstream_malformed") from None
        return Completion(body=normalised, source="live", latency_s=latency)

    def close(self) -> None:
        return None
