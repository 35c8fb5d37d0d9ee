"""Record and replay an SDK's model calls in-process: no server to start, no global patched.

    from tauproxy import intercept  # the code: tauproxy/interception/

    with intercept("cassettes/agent", mode="auto") as tp:
        client = openai.OpenAI(api_key="unused", http_client=tp.http_client())
        claude = anthropic.Anthropic(api_key="unused", http_client=tp.http_client())
        ...                      # or tp.async_http_client(); or tp.base_url for code that builds its own

The clients are httpx2's when it is installed (today's SDKs send through it), else httpx's.
Every request to a model API path serve answers (on whatever host the SDK addresses) goes through
serve's app and its cassette layer, with the keys serve gives it; anything else is refused (421).
See session.py for what it is built from, and docs/python.md for the pytest fixtures over it.
"""

from tauproxy.interception.session import Intercept, Upstream, intercept

__all__ = ["Intercept", "Upstream", "intercept"]
