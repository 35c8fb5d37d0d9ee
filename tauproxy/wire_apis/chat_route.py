"""Which chat-completions calls are sent to the upstream as they are, and which through litellm.

A chat call passes through (upstream.PassThroughTransport: the client's body, less connection
settings and the stream flag, posted to the endpoint's /chat/completions with httpx; the answer's
bytes recorded, and answered live and on replay alike) when the model it is routed to speaks
OpenAI's chat completions at its endpoint:

    openai/<name>          litellm's OpenAI provider: the route's api_base, else OPENAI_BASE_URL,
                           else api.openai.com, asked for <name>
    <name> (no provider)   a route with an api_base (a vLLM server, an OpenAI-compatible gateway),
                           or a name litellm's price map files under "openai" (gpt-4.1, o3, ...),
                           which litellm itself would send to OpenAI

The key is the route's api_key_env, else OPENAI_API_KEY, as litellm's OpenAI provider reads it.
Every other provider (anthropic/..., bedrock/..., azure/..., a bare name the map files elsewhere or
not at all) goes through litellm, which translates the request into the provider's own API: its
answer is a chat.completion litellm built, not bytes an upstream sent, so a replay answers the
recorded reply re-encoded (store/wire_form.py). Which path a call takes never changes its key
(data_model/key.py): a cassette recorded through either replays through both.
"""

from __future__ import annotations

from tauproxy.data_model.call import ModelCall
from tauproxy.proxy.pricing import map_provider

OPENAI = "openai"


def passes_through(call: ModelCall) -> bool:
    """Whether a chat call goes to its OpenAI-compatible upstream as it is (module docstring)."""
    routed = call.upstream_model or call.model
    provider, slash, _ = routed.partition("/")
    if slash:
        return provider == OPENAI
    return call.connection.api_base is not None or map_provider(routed) == OPENAI
