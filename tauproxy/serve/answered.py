"""The answers serve gave in their wire API's own shape, kept by response id for a client that fetches
one it was just given (`GET /v1/responses/{id}`); the cassette is searched for the others."""

from __future__ import annotations

import threading
from collections import OrderedDict

from tauproxy.data_model.completion import Completion


class AnsweredBodies:
    """The latest answers served in their API's own shape, by (API, response id): what a client that
    fetches a response it was just given (GET /v1/responses/{id}) asks for. Bounded; thread-safe."""

    LIMIT = 4_096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bodies: OrderedDict[tuple[str, str], str] = OrderedDict()

    def remember(self, api: str, completion: Completion) -> None:
        response_id = completion.body.get("id")
        if not isinstance(response_id, str) or completion.raw_body is None:
            return
        with self._lock:
            self._bodies[(api, response_id)] = completion.raw_body
            self._bodies.move_to_end((api, response_id))
            if len(self._bodies) > self.LIMIT:
                self._bodies.popitem(last=False)

    def get(self, api: str, response_id: str) -> str | None:
        with self._lock:
            return self._bodies.get((api, response_id))
