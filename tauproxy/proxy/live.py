"""Live calls through litellm. litellm is imported here, on the first live call, and nowhere else."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from tauproxy.errors import ModelCallError
from tauproxy.proxy.redact import redact_text
from tauproxy.proxy.transport import Completion, PreparedCall
from tauproxy.proxy.wire import response_from_wire

_import_lock = threading.Lock()


def _litellm() -> Any:
    with _import_lock:
        # Without the local map litellm fetches prices over the network at import and stalls offline.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        return litellm


class LiteLLMTransport:
    def complete(self, call: PreparedCall) -> Completion:
        litellm = _litellm()
        connection = call.request.connection
        kwargs: dict[str, Any] = dict(call.wire)
        for name in ("api_base", "api_key", "api_version", "timeout", "num_retries", "extra_headers"):
            value = getattr(connection, name)
            if value is not None:
                kwargs[name] = value
        started = time.perf_counter()
        try:
            raw = litellm.completion(**kwargs)
        except Exception as exc:
            status = getattr(exc, "status_code", None)
            message = redact_text(f"{type(exc).__name__}: {exc}", (connection.api_key or "",))
            raise ModelCallError(f"{call.request.model}: {message}", status_code=status) from None
        latency = time.perf_counter() - started
        body = raw.model_dump() if hasattr(raw, "model_dump") else dict(raw)
        try:
            response = response_from_wire(body)
        except ValueError as exc:
            raise ModelCallError(f"{call.request.model}: malformed response: {exc}") from None
        return Completion(response=response, source="live", latency_s=latency)

    def close(self) -> None:
        return None
