"""Deriving the request key of a v4 call line, which carries none (see format.py).

The key is key.KeyHasher fed the stored request one message at a time, so the calls of one
conversation share the hashing of their common prefix: the hasher of each recent chain node is kept,
and so are the texts of recently indexed messages and blobs (both bounded).
"""

from __future__ import annotations

from collections import OrderedDict

from tauproxy.data_model.key import KeyHasher
from tauproxy.store.entry import StoredRequest
from tauproxy.store.format import BlobLine, MsgLine, parse_line
from tauproxy.store.index_db import BLOB, KIND_NAME, MSG, NODE, Located, StaleIndex
from tauproxy.store.index_query import IndexQuery

HASHERS = 4_096  # key hashers of recent chain nodes (a conversation's next call extends its last one)
TEXTS_CHARS = 4 << 20  # characters of recent message and blob text kept for deriving keys


class KeyDeriver:
    """The keys of v4 call lines of one index, derived from what it holds."""

    def __init__(self, query: IndexQuery) -> None:
        self._query = query
        self._texts: OrderedDict[tuple[int, str], str] = OrderedDict()
        self._text_chars = 0
        self._hashers: OrderedDict[str, KeyHasher] = OrderedDict()

    def forget(self) -> None:
        """A reference became ambiguous: what was derived through it must be derived again."""
        self._texts.clear()
        self._text_chars = 0
        self._hashers.clear()

    def keep_text(self, key: tuple[int, str], text: str) -> None:
        if key not in self._texts:
            self._texts[key] = text
            self._text_chars += len(text)
            while self._text_chars > TEXTS_CHARS and len(self._texts) > 1:
                self._text_chars -= len(self._texts.popitem(last=False)[1])

    def text_of(self, kind: int, ref: str) -> str | None:
        """A message's or blob's canonical text, checked (recent ones from memory), or None if absent."""
        text = self._texts.get((kind, ref))
        if text is not None:
            return text
        found = self._query.find(kind, ref)
        if not isinstance(found, Located):
            return None
        line = parse_line(self._query.read_line(found.off, found.length))
        if not isinstance(line, MsgLine | BlobLine) or line.hash != found.full:
            raise StaleIndex(f"{KIND_NAME[kind]} {ref[:12]} is not at byte {found.off}")
        self.keep_text((kind, ref), line.text)
        return line.text

    def _hasher_of(self, ref: str) -> KeyHasher | None:
        """The key hasher of the messages of the chain ending at node `ref` (None: it does not resolve)."""
        walked: list[Located] = []
        hasher: KeyHasher | None = None
        current: str | None = ref
        while current is not None:
            node = self._query.find(NODE, current)
            if not isinstance(node, Located) or node.depth is None or node.message is None:
                return None
            hasher = self._hashers.get(node.full)
            if hasher is not None:
                break
            walked.append(node)
            current = node.parent
        hasher = hasher or KeyHasher()
        for node in reversed(walked):
            assert node.message is not None  # checked in the walk
            text = self.text_of(MSG, node.message)
            if text is None:
                return None
            hasher = hasher.then(text)
            self._hashers[node.full] = hasher
            if len(self._hashers) > HASHERS:
                self._hashers.popitem(last=False)
        return hasher

    def key_of(self, request: StoredRequest) -> str | None:
        """The request key of a stored v4 request (key.KeyHasher: request_key's one definition), or None
        when its chain or tools do not resolve."""
        hasher = KeyHasher() if request.chain is None else self._hasher_of(request.chain)
        tools = None if request.tools is None else self.text_of(BLOB, request.tools)
        if hasher is None or (request.tools is not None and tools is None):
            return None
        return hasher.key(request.model, request.params, request.tool_choice, tools)
