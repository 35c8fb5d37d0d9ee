"""Every wire API tauproxy speaks, by name. Adding one is adding its module and a line here;
serve's routes, the live transport and the key functions all read this registry."""

from __future__ import annotations

import httpx

from tauproxy.proxy.transport import Transport
from tauproxy.wire_apis.base import WireApi
from tauproxy.wire_apis.chat import ChatApi
from tauproxy.wire_apis.messages import MessagesApi
from tauproxy.wire_apis.responses import ResponsesApi
from tauproxy.wire_apis.upstream import ByWireApi, PassThroughTransport

WIRE_APIS: tuple[WireApi, ...] = (
    ChatApi(),
    ResponsesApi(),
    MessagesApi(),
)
BY_NAME: dict[str, WireApi] = {api.name: api for api in WIRE_APIS}


def wire_api(name: str) -> WireApi:
    """The registered API of that name; KeyError naming the known ones otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no wire API {name!r} (known: {', '.join(BY_NAME)})") from None


def api_for_path(path: str) -> WireApi | None:
    """The API whose POST route `path` is, whole or as the tail of a URL path
    ("/openai/v1/responses", a base URL's path plus the route); None if none is."""
    path = "/" + path.strip("/")
    for api in WIRE_APIS:
        if any(path == route or path.endswith(route) for route in api.paths):
            return api
    return None


def live_transport(chat: Transport, client: httpx.Client | None = None) -> Transport:
    """The live transport for every registered API: the provider's own endpoint (over `client`, an
    httpx client, for tests or interception), and `chat` (litellm) for chat completions whose route
    is not OpenAI-compatible (chat_route.py)."""
    return ByWireApi(chat, PassThroughTransport(BY_NAME, client))
