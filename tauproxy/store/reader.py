"""Reading a cassette: an entry by sample key, its request and response, the content it refers to.

A lookup reads just the lines it needs (through the index), so replay time and memory depend on the
calls a run uses, not on the cassette's size. What was read is kept in small bounded caches, dropped
whenever the index moves. Messages and blobs are read as their canonical JSON text, so `message`,
`blob`, `request_of` and `response_of` return fresh objects parsed from it: a caller may mutate them
without touching the store (a reply is kept as its answer message's JSON text, in wire order, so
`response_of` orders a reply answered again and again once). Entries returned by `lookup`, `entries`
and friends may be shared with the cache: read them, do not mutate them.

Chains are checked when indexed and walked only when a request is rebuilt (`request_of`,
`message_hashes`), never by `lookup`.
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from tauproxy.errors import CassetteError
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import json_value
from tauproxy.store.index_db import BLOB, MSG
from tauproxy.store.indexed_file import IndexedFile
from tauproxy.store.read_ahead import ReadAhead, entry_ahead, lookup_ahead
from tauproxy.store.wire_form import answer_message_text, body_around

Node = tuple[str, str | None, str]  # (hash, parent, message hash)

# A replay looks each sample up about once, so few entries are kept; message and blob texts (system
# prompts, tools lists) come back call after call. Both bounded, so a long replay's memory stays flat.
ENTRY_CACHE = 256  # entries
TEXT_CACHE_CHARS = 4 << 20  # characters of message and blob text


class CassetteReader:
    """The read side of one cassette (see the module docstring)."""

    def __init__(self, file: IndexedFile) -> None:
        self._file = file
        self._generation = -1
        self._entry_cache: OrderedDict[str, CassetteEntry | None] = OrderedDict()
        self._text_cache: OrderedDict[tuple[int, str], str] = OrderedDict()
        self._text_bytes = 0
        self._ahead = ReadAhead()
        # Replies as answer messages' JSON text (wire_form.answer_message_text), by reference: a
        # replay answers the same few replies again and again.
        self._answers: dict[tuple[int, str], str] = {}

    def _fresh_caches(self) -> None:
        """Drop what was cached if the index moved since (the caller holds the file's lock)."""
        if self._generation != self._file.generation:
            self._entry_cache.clear()
            self._text_cache.clear()
            self._text_bytes = 0
            self._ahead.clear()
            self._answers.clear()
            self._generation = self._file.generation

    def lookup(self, sample_key: str) -> CassetteEntry | None:
        """The winning entry of `sample_key`, or None. A line read ahead by an earlier lookup
        (read_ahead.py) costs no index query and no read; any other lookup reads ahead for the next."""
        with self._file.lock:
            self._fresh_caches()
            if sample_key in self._entry_cache:
                self._entry_cache.move_to_end(sample_key)
                return self._entry_cache[sample_key]
            ahead = self._ahead.take(sample_key)
            if ahead is not None:
                entry = self._file.read(lambda idx: entry_ahead(idx.query, sample_key, ahead))
                self._fresh_caches()  # a read that rebuilt the index moved it
            else:
                entry, following = self._file.read(lambda idx: lookup_ahead(idx.query, sample_key))
                self._fresh_caches()
                self._ahead.keep(following)
            self._entry_cache[sample_key] = entry
            if len(self._entry_cache) > ENTRY_CACHE:
                self._entry_cache.popitem(last=False)
            return entry

    def _text(self, kind: int, ref: str) -> str:
        with self._file.lock:
            self._fresh_caches()
            cached = self._text_cache.get((kind, ref))
            if cached is not None:
                self._text_cache.move_to_end((kind, ref))
                return cached
            text = self._file.read(lambda idx: idx.query.texts_of([(kind, ref)])[0])
            self._fresh_caches()
            self._keep((kind, ref), text)
            return text

    def _texts(self, wanted: list[tuple[int, str]]) -> list[str]:
        """`_text` of each (kind, reference); those not cached are read with one index query."""
        with self._file.lock:
            self._fresh_caches()
            texts = {want: text for want in wanted if (text := self._text_cache.get(want)) is not None}
            for want in texts:
                self._text_cache.move_to_end(want)
            missing = list(dict.fromkeys(want for want in wanted if want not in texts))
            if missing:
                read = self._file.read(lambda idx: idx.query.texts_of(missing))
                self._fresh_caches()
                for want, text in zip(missing, read, strict=True):
                    texts[want] = text
                    self._keep(want, text)
            return [texts[want] for want in wanted]

    def _keep(self, want: tuple[int, str], text: str) -> None:
        """Cache a text just read (the caller holds the lock), dropping the oldest past the bound."""
        self._text_cache[want] = text
        self._text_bytes += len(text)
        while self._text_bytes > TEXT_CACHE_CHARS and len(self._text_cache) > 1:
            self._text_bytes -= len(self._text_cache.popitem(last=False)[1])

    def by_key(self, key: str) -> list[CassetteEntry]:
        """The samples of one request key, in file order."""
        return self._file.read(lambda idx: idx.query.by_key(key))

    def entries(self) -> list[CassetteEntry]:
        """The winning entry of every sample key, in file order (of the winning line)."""
        return self._file.read(lambda idx: list(idx.query.entries()))

    def iter_entries(self, only: set[str] | None = None) -> Iterator[CassetteEntry]:
        """entries() (or those whose sample key is in `only`), read one at a time: for cassettes too
        large to hold in memory. Not under the object's lock: do not record while iterating."""
        idx = self._file.current()
        if idx is not None:
            yield from idx.query.entries(only)

    def sample_keys(self) -> Iterator[str]:
        """The sample key of every entry, in file order, read from the index alone."""
        idx = self._file.current()
        if idx is not None:
            yield from idx.query.sample_keys()

    def near(
        self, role: str | None, task_id: str, trial: int, model: str | None, chain: list[str]
    ) -> list[CassetteEntry]:
        """The few recorded calls a missed request most likely meant (index_query.IndexQuery.near)."""
        return self._file.read(lambda idx: idx.query.near(role, task_id, trial, model, chain))

    def has_calls_in(self, task_id: str, trial: int) -> bool:
        """Whether the cassette holds any usable call of this task and trial."""
        return self._file.read(lambda idx: idx.query.has_calls_in(task_id, trial))

    def node(self, digest: str) -> tuple[str | None, str]:
        """(parent node, message reference) of a chain node whose chain resolves."""
        found = self._file.read(lambda idx: idx.query.node(digest))
        if found is None:
            raise CassetteError(
                f"{self._file.file}: message chain node {digest[:12]} is not stored or does not resolve"
            )
        return found[1], found[2]

    def chain(self, digest: str | None) -> list[Node]:
        """The nodes (reference, parent, message) of a chain ending in `digest`, first message first."""
        nodes: list[Node] = []
        while digest is not None:
            parent, message = self.node(digest)  # resolvable nodes have acyclic, resolvable parents
            nodes.append((digest, parent, message))
            digest = parent
        nodes.reverse()
        return nodes

    def message_hashes(self, entry: CassetteEntry) -> list[str]:
        """The references of an entry's request messages, in order, whichever form the entry uses."""
        if entry.request.messages is not None:
            return list(entry.request.messages)
        return [message for _, _, message in self.chain(entry.request.chain)]

    def message_count(self, entry: CassetteEntry) -> int:
        """len(message_hashes(entry)) without walking the chain."""
        if entry.request.messages is not None:
            return len(entry.request.messages)
        chain = entry.request.chain
        if chain is None:
            return 0
        depth = self._file.read(lambda idx: idx.query.depth(chain))
        return depth if depth is not None else len(self.chain(chain))  # the latter raises

    def request_of(self, entry: CassetteEntry) -> dict[str, Any]:
        """The canonical wire request of an entry: {model, messages, tools, tool_choice, **params}."""
        body: dict[str, Any] = {
            "model": entry.request.model,
            "messages": [self.message(digest) for digest in self.message_hashes(entry)],
        }
        if entry.request.tools is not None:
            body["tools"] = self.blob(entry.request.tools)
        if entry.request.tool_choice is not None:
            body["tool_choice"] = copy.deepcopy(entry.request.tool_choice)
        body.update(copy.deepcopy(entry.request.params))
        return body

    def response_of(self, entry: CassetteEntry) -> dict[str, Any]:
        """The chat-completions body that was recorded (tool-call arguments in canonical JSON).

        The replay hot path: no chain walk, no deepcopy; every object in it is new. The answer's raw
        body, if it has one, is read with the reply (one index query), for raw_body_of to find cached.
        """
        response = entry.response
        reply = (BLOB, response.raw) if response.raw is not None else (MSG, response.message)
        with self._file.lock:
            self._fresh_caches()
            text = self._answers.get(reply)
            if text is None or response.body is not None:  # a body is read with it, for raw_body_of
                texts = self._texts([reply] if response.body is None else [reply, (BLOB, response.body)])
                text = self._answers[reply] = answer_message_text(texts[0])
                if len(self._answers) > ENTRY_CACHE:
                    self._answers.pop(next(iter(self._answers)))
        message: dict[str, Any] = json_value(text)
        return body_around(message, response, entry.usage, entry.sample_key, entry.request.model)

    def raw_body_of(self, entry: CassetteEntry) -> str | None:
        """The answer body exactly as the upstream sent it, for wire APIs that keep it (entry.py)."""
        if entry.response.body is None:
            return None
        text = self.blob(entry.response.body)
        if not isinstance(text, str):
            raise CassetteError(f"{self._file.file}: response body blob {entry.response.body[:12]} is not text")
        return text

    def message(self, digest: str) -> dict[str, Any]:
        """A fresh copy of a stored message."""
        message: dict[str, Any] = json.loads(self.message_text(digest))
        return message

    def message_text(self, digest: str) -> str:
        """A stored message as its canonical JSON text."""
        return self._text(MSG, digest)

    def blob(self, digest: str) -> Any:
        """A fresh copy of a stored blob."""
        return json.loads(self.blob_text(digest))

    def blob_text(self, digest: str) -> str:
        return self._text(BLOB, digest)
