"""The line format of `calls.jsonl`, the one file of a cassette directory.

UTF-8, one JSON object per line, append-only, keys sorted, compact separators. Four kinds of line:

    {"t":"msg","h":HASH,"m":MESSAGE}      one canonical wire message; HASH = key.message_hash(MESSAGE)
    {"t":"blob","h":HASH,"v":VALUE}       one tools list, a raw reply, or (a JSON string) an answer
                                          body as its upstream sent it; HASH = key.blob_hash(VALUE)
    {"t":"node","p":PREV,"m":M}           one link of a message chain, named key.blob_hash({"p":PREV,"m":M})
    {"t":"call", ...CassetteEntry}        one sample; its request and reply name their content by hash

A request's message list is a chain of nodes: the node of its last message names that message (`m`, a
message hash) and the node of the list before it (`p`, null for the first message). A node's hash
covers its parent's hash, so it names the whole list up to and including its message, as a git commit
names its history. A call line carries one node hash, `request.chain` (null when there are no
messages). Consecutive calls of a conversation share their prefix: each call adds one node per new
message, and the file grows linearly with the conversation, not with the square of it.

Messages, blobs and nodes are content-addressed and written once per cassette; one may appear more than
once (a git union merge of two branches that both wrote it); the copies are identical by construction
and readers keep one. References are resolved after the whole file is read, so line order between kinds
does not matter. Writers still put a call's new messages, blob and nodes (parents first) before its call
line, in the same append.

Entry format versions (the call line's `v`): 4 writes only what cannot be derived. The call line
carries no `key`: the reader computes it from the stored request (its chain's messages, tools, model,
tool_choice and params) with key.KeyHasher, which is key.request_key fed one message at a time, so the
calls of a conversation share the hashing of their common prefix and the key has one definition; the
index does this once per call when it indexes the line, and keeps the key. No `sample_key` either
(key.sample_key of key, seed, task_id, trial and occurrence), no `seed` when it equals the request's
(`request.params.seed`, which is where key.seed_of takes it from), no null field, no zero token count
and no `total_tokens` equal to prompt + completion: absent means exactly that. Node lines carry no `h`
(a node is its `p` and `m`; its address is node_hash of them, computed by every reader anyway). Under
gzip, which is how git stores a cassette, a 64-hex key is 32 bytes per call that do not compress and
each field that changes from line to line costs bytes too; v3 was 0.64 of vcrpy's size on mock.
3 is 4 with those fields written (the key in full, nulls, zeros; node lines with `h`), with short
references: every reference (`h`, a node's `p` and `m`, a call's `request.chain`, `request.tools`,
`response.message`, `response.raw` and `response.body`) is the first REF_LEN (16) hex digits of the
content's sha256.
2 wrote full 64-hex references and the sample key; 1 listed one message hash per message in
`request.messages`. All are still read, and compact, prune and merge rewrite them as v4; a file may
mix versions (a union merge of a branch that upgraded with one that did not).

A reference is resolved by prefix: it names the stored content whose full sha256 (always recomputed
from the line, never trusted) starts with it, so a 64-hex v2 reference and a 16-hex v3 one resolve
alike. Short references stay union-mergeable: they are content addresses, so two branches that store
the same message write the same reference, and two different contents sharing 16 hex digits (about
n^2 / 2^65 for n stored contents: 3e-6 for ten million) are detected, never guessed: the reader
reports the reference as ambiguous and every call using it as unusable (so it is recorded again), and
a writer that sees such a clash in its own cassette writes that content with its full 64-hex hash.
A node's hash covers the references as written, so a v3 chain and a v2 chain of the same messages are
different nodes (compact converges them).

Calls of the wire APIs other than chat completions (tauproxy/wire_apis/: the Responses API, ...) are
call lines like any other: their keyed, chat-shaped request (input items as the message chain, the
API's name in `request.params.tauproxy_wire_api`), the reply's chat-shaped view as `response.message`,
and `response.body`, a blob holding the answer body exactly as the upstream sent it, which a replay
answers. A chat call line carries `response.body` only when serve passed the call through to an
OpenAI-compatible upstream (wire_apis/chat_route.py); every other chat line is written exactly as before.
A line with `response.body` carries `response.content_type` too when the upstream sent the body as
anything but plain application/json, which a replay answers with.

Lines are split on b"\\n" only: canonical JSON escapes newlines inside strings, but it leaves U+2028
and friends raw, which `str.splitlines` would wrongly treat as line ends.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json

from tauproxy.data_model.key import blob_hash, canonical_json, canonical_message, sample_key
from tauproxy.errors import CassetteError
from tauproxy.store.entry import ENTRY_VERSION, CassetteEntry

CALLS_FILE = "calls.jsonl"
# The cassette's private files live in PRIVATE_DIR beside calls.jsonl, which ignores itself in git
# (its own `.gitignore`): the derived index (index.py), the lock (locking.py) and a rewrite in
# progress (rewrite.py). Nothing but calls.jsonl is ever offered for commit.
PRIVATE_DIR = ".tauproxy-index"
LOCK_FILE = "calls.jsonl.lock"  # in PRIVATE_DIR; older versions kept it beside calls.jsonl
# A rewrite's temp file (compact, merge, prune), in PRIVATE_DIR; older versions wrote it beside calls.jsonl.
REWRITE_PREFIX, REWRITE_SUFFIX = ".calls.", ".tmp"
REF_LEN = 16  # hex digits of a v3 reference: 64 bits (see the module docstring for the odds)
FULL_LEN = 64


def short_ref(digest: str) -> str:
    """The v3 reference of a full sha256."""
    return digest[:REF_LEN]


def ref_matches(digest: str, ref: str) -> bool:
    """Whether `ref` (16 to 64 hex digits) names the content whose full hash is `digest`."""
    return REF_LEN <= len(ref) <= FULL_LEN and digest.startswith(ref)


@dataclass(frozen=True)
class MsgLine:
    """A message, kept as its canonical JSON text: every read parses a fresh copy.

    `hash` is always the full sha256 of `text`, whatever length of reference the line wrote.
    """

    hash: str
    text: str

    @property
    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self.text)
        return message


@dataclass(frozen=True)
class BlobLine:
    hash: str
    text: str

    @property
    def value(self) -> Any:
        return json.loads(self.text)


@dataclass(frozen=True)
class NodeLine:
    """A chain node: `hash` the full node hash, `parent` and `message` the references as written."""

    hash: str
    parent: str | None
    message: str


@dataclass(frozen=True)
class CallLine:
    """A v4 call line, checked, whose request key is still to be derived from its stored request.

    `unkeyed` is the entry with `key` and `sample_key` empty: read its request and response, never
    its identity; `keyed` gives the entry once the key is known (CassetteIndex derives it).
    """

    unkeyed: CassetteEntry

    def keyed(self, key: str) -> CassetteEntry:
        entry = self.unkeyed
        identity = sample_key(key, entry.seed, entry.task_id, entry.trial, entry.occurrence)
        return entry.model_copy(update={"key": key, "sample_key": identity})


Line = MsgLine | BlobLine | NodeLine | CassetteEntry | CallLine
# The lines a writer hands the index already parsed, by their bytes (IndexBuilder.sync): content and nodes.
WrittenLine = MsgLine | BlobLine | NodeLine


@dataclass(frozen=True)
class CassetteProblem:
    """A line that could not be used; the rest of the cassette stays readable."""

    path: Path
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


_HEX = re.compile(r"[0-9a-f]{1,64}")


def node_hash(parent: str | None, message: str) -> str:
    """Content address of a chain node: the message list ending in `message` after `parent`'s.

    key.blob_hash({"p": parent, "m": message}); for hex references (every node a writer makes) its
    canonical JSON is written out directly, the same bytes without a dict and an encoder per node.
    """
    if _HEX.fullmatch(message) and (parent is None or _HEX.fullmatch(parent)):
        previous = "null" if parent is None else f'"{parent}"'
        return hashlib.sha256(f'{{"m":"{message}","p":{previous}}}'.encode()).hexdigest()
    return blob_hash({"p": parent, "m": message})


def chain_nodes(message_hashes: list[str]) -> list[tuple[str, str | None, str]]:
    """The (hash, parent, message) nodes of a message list in the v2 form (full references)."""
    nodes: list[tuple[str, str | None, str]] = []
    parent: str | None = None
    for message in message_hashes:
        digest = node_hash(parent, message)
        nodes.append((digest, parent, message))
        parent = digest
    return nodes


def chain_refs(message_refs: list[str]) -> list[tuple[str, str | None, str]]:
    """The (reference, parent reference, message reference) nodes of a v3 chain, first message first.

    `message_refs` are the references the messages are written under (normally short_ref of their
    hash); each node is referred to by short_ref of its hash over those references.
    """
    nodes: list[tuple[str, str | None, str]] = []
    parent: str | None = None
    for message in message_refs:
        digest = short_ref(node_hash(parent, message))
        nodes.append((digest, parent, message))
        parent = digest
    return nodes


def encode_msg(digest: str, message: dict[str, Any]) -> str:
    return canonical_json({"t": "msg", "h": digest, "m": message}) + "\n"


def encode_msg_text(digest: str, text: str) -> str:
    """encode_msg for a message already held as canonical JSON text (no parse, same bytes)."""
    return f'{{"h":"{digest}","m":{text},"t":"msg"}}\n'


def encode_blob_text(digest: str, text: str) -> str:
    return f'{{"h":"{digest}","t":"blob","v":{text}}}\n'


# A message or blob line exactly as encode_msg_text and encode_blob_text write it: its hash, then its text.
_WRITTEN_MSG = re.compile(rb'\{"h":"([0-9a-f]{16,64})","m":')
_WRITTEN_BLOB = re.compile(rb'\{"h":"([0-9a-f]{16,64})","t":"blob","v":')
_MSG_END = b',"t":"msg"}'
_BLOB_END = b"}"


def text_as_written(raw: bytes, blob: bool, full: str) -> str | None:
    """The text of a message (or blob) line spelled exactly as a writer writes it, if that text hashes
    to `full` and the line's own hash names it: then it is the very canonical text parse_line would
    give (one full sha256, one text), found without a JSON parse. None otherwise: parse the line.

    For a reader that knows the full hash already (the index's): a replay reads a hit's reply this way.
    """
    head = (_WRITTEN_BLOB if blob else _WRITTEN_MSG).match(raw)
    end = _BLOB_END if blob else _MSG_END
    if head is None or not raw.endswith(end):
        return None
    text = raw[head.end() : len(raw) - len(end)]
    if hashlib.sha256(text).hexdigest() != full or not ref_matches(full, head.group(1).decode()):
        return None
    return text.decode("utf-8")


def encode_node(parent: str | None, message: str) -> str:
    """A v4 node line: no `h`, the node is named by node_hash(parent, message). For hex references
    (every node a writer makes) the canonical JSON is written out directly, as node_hash does."""
    if _HEX.fullmatch(message) and (parent is None or _HEX.fullmatch(parent)):
        previous = "null" if parent is None else f'"{parent}"'
        return f'{{"m":"{message}","p":{previous},"t":"node"}}\n'
    return canonical_json({"t": "node", "p": parent, "m": message}) + "\n"


def encode_call(entry: CassetteEntry) -> str:
    return canonical_json({"t": "call", **entry.wire_form()}) + "\n"


# A v4 node line exactly as written (keys sorted, hex references): read without a JSON parser. Any
# other spelling of a node line takes the general path below, which accepts the same lines.
_NODE_LINE = re.compile(rb'\{"m":"([0-9a-f]{16,64})","p":(?:null|"([0-9a-f]{16,64})"),"t":"node"\}')


def parse_line(raw: bytes) -> Line:
    """One line, checked. ValueError names what is wrong; CassetteError means "upgrade tauproxy"."""
    node = _NODE_LINE.fullmatch(raw)
    if node is not None:
        message, parent = node.group(1).decode(), node.group(2)
        previous = None if parent is None else parent.decode()
        return NodeLine(node_hash(previous, message), previous, message)
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    kind = obj.get("t")
    if kind == "msg":
        message = obj.get("m")
        if not isinstance(message, dict):
            raise ValueError("malformed msg line: `m` is not an object")
        # key.message_hash, keeping the canonical text it hashes: the cassette serves copies of it.
        text = canonical_json(canonical_message(message))
        return MsgLine(_checked_hash(obj, hashlib.sha256(text.encode()).hexdigest()), text)
    if kind == "blob":
        if "v" not in obj:
            raise ValueError("malformed blob line: no `v`")
        text = canonical_json(obj["v"])
        return BlobLine(_checked_hash(obj, hashlib.sha256(text.encode()).hexdigest()), text)
    if kind == "node":
        return _parse_node(obj)
    if kind == "call":
        return _parse_call(obj)
    raise ValueError(f"unknown line kind {kind!r}")


def json_value(text: str) -> Any:
    """json.loads(text), parsed by pydantic_core's faster parser, which builds the same values; a
    text that one refuses (a lone surrogate escape, which json reads) goes to json.loads."""
    try:
        return from_json(text)
    except ValueError:
        return json.loads(text)


def parse_keyed_call(raw: bytes, key: str, sample_key: str) -> CassetteEntry | None:
    """A v4 call line whose request key and sample key the index derived from these very bytes (its
    line check says they are those bytes), validated once with both: what parse_line and
    CallLine.keyed make of it, without hashing its request and sample key again or a second model.
    None for any line this does not read as they would (another version, a line that is not an
    object, a string pydantic_core does not decode as json does): parse_line then reads it, and says
    what is wrong with it.

    The replay's read path: pydantic_core's parser builds the same plain values as json.loads, faster.
    """
    try:
        obj = from_json(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("t") != "call" or obj.get("v") != 4 or "key" in obj or "sample_key" in obj:
        return None
    del obj["t"]  # a fresh dict: no copy without the line kind
    fields = CassetteEntry.fields_of_v4(obj)
    fields["key"], fields["sample_key"] = key, sample_key
    try:
        entry = CassetteEntry.model_validate(fields)
    except ValidationError:
        return None
    return entry if entry.request.messages is None else None


def _parse_node(obj: dict[str, Any]) -> NodeLine:
    parent, message = obj.get("p", ...), obj.get("m")
    if not isinstance(message, str):
        raise ValueError("malformed node line: `m` is not a message hash")
    if parent is not None and not isinstance(parent, str):
        raise ValueError("malformed node line: `p` is neither a node hash nor null")
    digest = node_hash(parent, message)
    return NodeLine(digest if "h" not in obj else _checked_hash(obj, digest), parent, message)  # v4: no `h`


def _checked_hash(obj: dict[str, Any], actual: str) -> str:
    """The full hash `actual`, once the line's own (possibly shortened) hash is checked against it."""
    digest = obj.get("h")
    if not isinstance(digest, str):
        raise ValueError(f"malformed {obj['t']} line: no hash")
    if not ref_matches(actual, digest):
        raise ValueError(
            f"{obj['t']} hash mismatch: line says {digest[:12]}, content hashes to {actual[:12]} (edited?)"
        )
    return actual


def _parse_call(obj: dict[str, Any]) -> CassetteEntry | CallLine:
    version = obj.get("v", 3)  # every version writes `v`; before v4 the absent default was 3
    if isinstance(version, int) and not isinstance(version, bool) and version > ENTRY_VERSION:
        raise CassetteError(
            f"entry format v{version} was written by a newer tauproxy (this one reads up to "
            f"v{ENTRY_VERSION}); upgrade tauproxy"
        )
    fields = {"v": version, **{k: v for k, v in obj.items() if k != "t"}}
    if version == 4:
        if "key" in fields or "sample_key" in fields:
            raise ValueError("malformed call line: a v4 line carries no key (it is derived from the request)")
        return CallLine(_validated({**CassetteEntry.fields_of_v4(fields), "key": "", "sample_key": ""}))
    if isinstance(version, int) and version >= 3 and "sample_key" not in fields:
        fields["sample_key"] = _derived_sample_key(fields)
    request = fields.get("request")
    if version == 1 and isinstance(request, dict) and "messages" not in request:
        fields["request"] = {**request, "messages": []}  # v1 wrote no list for a request without messages
    return _validated(fields)


def _validated(fields: dict[str, Any]) -> CassetteEntry:
    try:
        entry = CassetteEntry.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "entry"
        raise ValueError(f"malformed call line: {where}: {first['msg']}") from None
    if entry.v >= 4 and entry.request.messages is not None:
        raise ValueError("malformed call line: a v4 request names its messages by `chain`")
    return entry


def _derived_sample_key(fields: dict[str, Any]) -> str:
    """A v3 line's sample key, from the fields it is made of (key.sample_key is its one definition)."""
    key, seed, task, trial, occurrence = (fields.get(n) for n in ("key", "seed", "task_id", "trial", "occurrence"))
    ints_ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (trial, occurrence))
    seed_ok = seed is None or (isinstance(seed, int) and not isinstance(seed, bool))
    if not (isinstance(key, str) and isinstance(task, str) and ints_ok and seed_ok):
        raise ValueError("malformed call line: key, seed, task_id, trial or occurrence missing or mistyped")
    assert isinstance(trial, int) and isinstance(occurrence, int)  # for mypy: checked just above
    return sample_key(key, seed, task, trial, occurrence)
