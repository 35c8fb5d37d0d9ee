"""Keep secrets out of everything tauproxy writes: results, cassettes, logs and error messages."""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SECRET_ARG_NAMES = frozenset({"api_key", "headers", "extra_headers", "authorization", "aws_secret_access_key"})
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
_SECRET_QUERY = re.compile(r"(key|token|secret|signature|sig|password|auth)", re.IGNORECASE)
_KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9._\-]{8,})")
MASK = "***"


def redact_url(url: str) -> str:
    """Drop user:password@ and secret-looking query parameters from a URL."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = urlencode([(k, MASK if _SECRET_QUERY.search(k) else v) for k, v in parse_qsl(parts.query)])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_llm_args(args: dict[str, Any]) -> dict[str, Any]:
    """llm args as they may be written to a results file: no keys, no headers, clean api_base."""
    clean: dict[str, Any] = {}
    for name, value in args.items():
        if name.lower() in SECRET_ARG_NAMES:
            continue
        if name in ("api_base", "base_url") and isinstance(value, str):
            value = redact_url(value)
        clean[name] = value
    return clean


def redact_text(text: str, extra_secrets: tuple[str, ...] = ()) -> str:
    """Mask key-like strings and the values of secret environment variables in free text."""
    return Redactor(extra_secrets).text(text)


class Redactor:
    """Masks secrets in text and in JSON values (recorded requests and responses shown in reports).

    The secrets (values of secret-looking environment variables, plus any given) are read once, so
    masking the thousands of strings of a run's recorded calls does not rescan the environment each time.
    """

    def __init__(self, extra_secrets: tuple[str, ...] = ()) -> None:
        secrets = [s for s in extra_secrets if s and len(s) >= 6]
        secrets.extend(v for k, v in os.environ.items() if _SECRET_ENV.search(k) and v and len(v) >= 6)
        self._secrets = sorted(set(secrets), key=len, reverse=True)

    def text(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return _KEY_LIKE.sub(MASK, text)

    def value(self, value: Any) -> Any:
        """A JSON value with every string masked as `text` does, and the whole value of a field named
        like a secret (api_key, headers, authorization, ...) replaced by the mask."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {
                key: MASK if str(key).lower() in SECRET_ARG_NAMES else self.value(item) for key, item in value.items()
            }
        return value
