"""Which requests an intercept answers: the model API paths serve routes, on whatever host.

An SDK keeps its own base_url (api.openai.com, api.anthropic.com, a company gateway), so the host is
not looked at: the path is. A request whose method and path no serve route of a model API takes (an
SDK's file upload, a typo'd base_url prefix, a call meant for another service) is answered 421
Misdirected Request with one line naming it and the paths that are answered, instead of silently
going somewhere: an intercepted client never reaches the network itself. serve's own operational
routes (health, stats) are not model APIs and are refused too.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Match, Route

from tauproxy.serve.errors import HttpError

__all__ = ["NOT_INTERCEPTED_CODE", "ApiRoutes"]

NOT_INTERCEPTED_CODE = "tauproxy_not_intercepted"
# serve's routes that answer about the server, not for a model API.
OPERATIONAL_PATHS = frozenset({"/healthz", "/stats"})


class ApiRoutes:
    """The model API routes of one serve app, and the refusal for a request none of them takes."""

    def __init__(self, app: Starlette) -> None:
        self._routes: list[BaseRoute] = [
            route for route in app.routes if not (isinstance(route, Route) and route.path in OPERATIONAL_PATHS)
        ]

    def takes(self, method: str, path: str) -> bool:
        scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
        return any(route.matches(scope)[0] is Match.FULL for route in self._routes)

    def described(self) -> str:
        shown = []
        for route in self._routes:
            if isinstance(route, Route):
                methods = "|".join(sorted((route.methods or set()) - {"HEAD"}))
                shown.append(f"{methods} {route.path}")
        return ", ".join(shown)

    def refusal(self, http: ModuleType, request: Any) -> Any:
        """None when a route takes `request` (of the library `http`: httpx or httpx2); else the 421
        answer that says so."""
        if self.takes(request.method, request.url.path):
            return None
        error = HttpError(
            421,
            f"tauproxy intercept answers the model APIs only ({self.described()}), on any host; "
            f"this client asked for {request.method} {request.url.copy_with(query=None)}",
            "invalid_request_error",
            NOT_INTERCEPTED_CODE,
        )
        body = json.dumps(error.body(), separators=(",", ":")).encode("utf-8")
        return http.Response(421, content=body, headers={"content-type": "application/json"}, request=request)
