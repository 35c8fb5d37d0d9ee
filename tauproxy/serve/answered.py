"""The answers serve gave in their wire API's own shape, kept by response id for a client that fetches
one it was just given (`GET /v1/responses/{id}`); the cassette is searched for the others."""

from __future__ import annotations

import threading
from collections import OrderedDict

from tauproxy.data_model.completion import Completion


class AnsweredBodies:
    """The latest answers served in their API's own shape, by (API, response id): what a client that
    fetches a response it was just given (GET /v1/responses/{id}) asks for. Thread-safe, and bounded
    by count and by size: a count alone held 4,096 whole answers however long, 400 MB of 100 KB ones.
    Older answers are searched for in the cassette, a scan of all of it, so the size bound is loose."""

    LIMIT = 4_096
    LIMIT_CHARS = 32 << 20

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bodies: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._chars = 0

    def remember(self, api: str, completion: Completion) -> None:
        response_id = completion.body.get("id")
        if not isinstance(response_id, str) or completion.raw_body is None:
            return
        with self._lock:
            replaced = self._bodies.pop((api, response_id), None)
            self._chars += len(completion.raw_body) - (len(replaced) if replaced is not None else 0)
            self._bodies[(api, response_id)] = completion.raw_body
            while len(self._bodies) > 1 and (len(self._bodies) > self.LIMIT or self._chars > self.LIMIT_CHARS):
                self._chars -= len(self._bodies.popitem(last=False)[1])

    def get(self, api: str, response_id: str) -> str | None:
        with self._lock:
            return self._bodies.get((api, response_id))
