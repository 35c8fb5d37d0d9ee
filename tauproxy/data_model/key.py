"""The one definition of a request's key and of a sample's identity.

The key is sha256 over canonical JSON of the request as the model sees it (OpenAI wire shape):

IN the key (anything that can change the output):
    model         the model name exactly as requested ("openai/gpt-4.1" and "gpt-4.1" differ)
    messages      role, content, name, tool_calls, tool_call_id and any other non-null field;
                  tool-call `arguments` strings are parsed and re-serialised with sorted keys and no
                  whitespace, so '{"b":1, "a":2}' and '{"a": 2,"b": 1}' are the same request
    tools         the full function schemas
    tool_choice
    every other parameter: temperature, top_p, seed, max_tokens, stop, response_format, n, ...
                  (unknown parameters are included: when in doubt, a parameter is in the key)

NOT in the key (EXCLUDED_PARAMS; none of them changes what the model says, none is ever written to
disk; `without_connection_settings` is the one filter that drops them, wherever a body or llm args
are keyed, recorded or compared):
    api_key, api_base, base_url, api_version, organization   where and as whom the call goes
    aws_access_key_id, aws_secret_access_key, aws_session_token,
    vertex_credentials, authorization                          provider credentials: secrets, never stored
    headers, extra_headers                                     transport detail, may hold secrets
    timeout, request_timeout, num_retries, max_retries         how long and how often to try
    metadata, user, stream, stream_options                    bookkeeping; a stream is recorded
                                                               assembled, so it matches a non-stream
    null-valued fields anywhere                                absent and null mean the same

Other wire APIs (tauproxy/wire_apis/: the Responses API, Anthropic's Messages API) are keyed by
this same function, over a chat-shaped canonical form of their request that carries the API's name
in the parameter WIRE_API_PARAM, so two APIs' requests never share a key. A chat request has no
such parameter (serve refuses a chat body that sends one), so chat keys are what they always were.
docs/keys.md sets the definitions side by side.

A sample is one draw from a request. k trials at temperature 0 are still k samples, so the sample
key adds: the seed carried in the request, the trial scope (task id, trial) and the occurrence number
of this request key within the scope (0 for the first time, 1 for an identical second call, ...).
`identify` is the one place that computes it, for the in-process client and for `tauproxy serve`
alike, with an `Occurrences` counter that hands out the occurrence numbers. A request that names no
trial (serve without a scope header, τ²-bench's own calls) is identified by `identify_unscoped`: in
SERVE_SCOPE; with a seed always occurrence 0 (the seed names the draw), without one counted in
arrival order by the caller's session (serve/identity.py has the rule and its trade-offs).
"""

from __future__ import annotations

import hashlib
import json
import marshal
import threading
from _json import encode_basestring, make_encoder
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

KEY_VERSION = 1

# The one list of request fields that are never part of a key and never written to disk, each with
# why it changes nothing the model says. `without_connection_settings` is the one filter over it.
EXCLUDED_PARAMS: frozenset[str] = frozenset(
    {
        # where and as whom the call goes
        "api_key",
        "api_base",
        "base_url",
        "api_version",
        "organization",
        # provider credentials: secrets, never stored
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "vertex_credentials",
        "authorization",
        # transport detail, may hold secrets
        "headers",
        "extra_headers",
        # how long and how often to try
        "timeout",
        "request_timeout",
        "num_retries",
        "max_retries",
        # bookkeeping; a stream is recorded assembled, so it matches a non-stream
        "metadata",
        "user",
        "stream",
        "stream_options",
    }
)


def without_connection_settings(params: Mapping[str, Any]) -> dict[str, Any]:
    """A request body or llm args with every EXCLUDED_PARAMS field dropped, the rest as given.

    What is keyed, recorded and compared: where, as whom, how long and how often a call is sent
    never changes an answer, so none of it reaches a key, a cassette or a run directory.
    """
    return {name: value for name, value in params.items() if name not in EXCLUDED_PARAMS}


STRUCTURAL_FIELDS = ("model", "messages", "tools", "tool_choice")

# The parameter that names a non-chat wire API in its keyed form ("responses", "messages"); absent
# from every chat request, so chat keys are unchanged and no two APIs' requests share a key.
WIRE_API_PARAM = "tauproxy_wire_api"


def wire_api_of(wire: Mapping[str, Any]) -> str:
    """The wire API a keyed request (or a stored request's params) speaks: "chat" unless it names one."""
    api = wire.get(WIRE_API_PARAM)
    return api if isinstance(api, str) else "chat"


# json.dumps with these arguments builds this same encoder on every call; one built once says the
# same bytes, without that cost on every line a cassette index reads.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """_CANONICAL.encode(value): the C encoder it makes, called directly.

    JSONEncoder.encode and iterencode are two Python calls that only pick that encoder (for these
    settings, always the same one, with a fresh circular-reference check) and join its output; a
    request's key encodes a dozen values, so this is what they cost twice over. The same bytes.
    """
    if isinstance(value, str):
        return encode_basestring(value)
    return "".join(make_encoder({}, _CANONICAL.default, encode_basestring, None, ":", ",", True, False, True)(value, 0))


def canonical_arguments(arguments: Any) -> str:
    """A tool call's arguments as one canonical string, whether given as text or as an object."""
    if isinstance(arguments, str):
        try:
            parsed: Any = json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
        return canonical_json(parsed)
    return canonical_json(arguments)


def _drop_nulls(value: Any) -> Any:
    # Recurses into containers only: a τ²-sized request holds a few hundred strings and numbers, and
    # a call per leaf was most of a key's cost.
    if isinstance(value, dict):
        return {k: _drop_nulls(v) if isinstance(v, dict | list) else v for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) if isinstance(v, dict | list) else v for v in value]
    return value


def canonical_message(message: dict[str, Any]) -> dict[str, Any]:
    message = _drop_nulls(message)
    calls = message.get("tool_calls")
    if calls:
        canonical_calls = []
        for call in calls:
            call = dict(call)
            function = dict(call.get("function") or {})
            if "arguments" in function:
                function["arguments"] = canonical_arguments(function["arguments"])
            call["function"] = function
            call.setdefault("type", "function")
            canonical_calls.append(call)
        message["tool_calls"] = canonical_calls
    elif "tool_calls" in message:
        del message["tool_calls"]
    return message


def canonical_request(wire: dict[str, Any]) -> dict[str, Any]:
    """The part of an OpenAI-shaped request body that can change the answer, in canonical form."""
    return {
        "model": wire.get("model"),
        "messages": [canonical_message(m) for m in wire.get("messages") or []],
        "tools": _drop_nulls(wire.get("tools")) or None,
        "tool_choice": _drop_nulls(wire.get("tool_choice")),
        "params": _params(wire),
    }


def _params(wire: dict[str, Any]) -> dict[str, Any]:
    params = {
        name: value
        for name, value in wire.items()
        if name not in EXCLUDED_PARAMS and name not in STRUCTURAL_FIELDS and value is not None
    }
    return _drop_nulls(params)  # type: ignore[no-any-return]


class _TextMemo:
    """Canonical texts by the marshal bytes of the value they were made from, bounded in size.

    Every call of an agent repeats its system prompt (τ²'s airline policy: 15 KB), its tool schemas
    (8 KB) and its conversation so far, each parsed afresh from the request body; marshal writes a
    parsed JSON value about ten times faster than canonicalising it. Equal marshal bytes load as equal
    values of equal types (1, 1.0 and True differ, so do key orders), so their canonical texts are
    equal: the memo changes no key. Values marshal refuses (an enum, a subclass) are canonicalised as
    given. A message of strings only is remembered by its items instead (`text_of_strings`). When
    full it starts again empty; thread-safe because a lookup is one dict read and a reset is one
    assignment.
    """

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._texts: dict[bytes | tuple[str, ...], str | None] = {}
        self._chars = 0

    def text(self, value: Any, canonical: Callable[[Any], str | None]) -> str | None:
        try:
            plain = marshal.dumps(value)
        except ValueError:
            return canonical(value)
        return self._remembered(plain, len(plain), value, canonical)

    def text_of_strings(self, value: dict[str, str], canonical: Callable[[Any], str | None]) -> str | None:
        """`text` of a dict whose keys and values are all exactly str (most messages of a
        conversation), remembered by its keys then its values: equal tuples are equal dicts, whose
        canonical texts are equal (the same items in another order are another entry, of the same
        text). Their strings hash once each and keep their hash, so a system prompt that serve's
        role recognition looked up already (serve/roles.py) costs no pass over it here, where marshal
        would copy it and hash the copy; and a tuple of strings is soon untracked by the garbage
        collector, as bytes always are, where a frozenset would be scanned by every collection."""
        size = sum(len(text) for text in value.values())
        return self._remembered((*value, *value.values()), size, value, canonical)

    def _remembered(
        self,
        found_by: bytes | tuple[str, ...],
        size: int,
        value: Any,
        canonical: Callable[[Any], str | None],
    ) -> str | None:
        texts = self._texts
        if found_by in texts:
            return texts[found_by]
        text = canonical(value)
        size += len(text) if text is not None else 0
        if self._chars + size > self._max_chars:
            texts = self._texts = {}
            self._chars = 0
        texts[found_by] = text
        self._chars += size
        return text

    def clear(self) -> None:
        self._texts = {}
        self._chars = 0


# Bounded so a long run's memory stays flat: a τ² conversation's messages take about 100 kB, its
# tools 8 kB, so these hold dozens of conversations in flight.
_MESSAGE_TEXTS = _TextMemo(4 << 20)
_TOOLS_TEXTS = _TextMemo(1 << 20)


def message_text(message: Any) -> str:
    """canonical_json(canonical_message(message)), remembered (_TextMemo): what a key hashes of a message."""
    if type(message) is dict and all(type(name) is str and type(part) is str for name, part in message.items()):
        # Without tool calls such a message is its own canonical form: no null to drop, no arguments.
        canonical = canonical_json if "tool_calls" not in message else _canonical_message_text
        text = _MESSAGE_TEXTS.text_of_strings(message, canonical)
    else:
        text = _MESSAGE_TEXTS.text(message, _canonical_message_text)
    assert text is not None  # _canonical_message_text never gives None
    return text


def _canonical_message_text(message: Any) -> str:
    return canonical_json(canonical_message(message))


def tools_text(tools: Any) -> str | None:
    """canonical_json of a request's canonical tools (None without any), remembered (_TextMemo)."""
    if not tools:
        return None
    return _TOOLS_TEXTS.text(tools, _canonical_tools_text)


def _canonical_tools_text(tools: Any) -> str | None:
    canonical = _drop_nulls(tools) or None
    return None if canonical is None else canonical_json(canonical)


def request_key(wire: dict[str, Any]) -> str:
    """sha256 of the canonical request. The only function that defines a key."""
    hasher = _FIRST_HASHER
    for message in wire.get("messages") or []:
        text = message_text(message)
        hasher = _FIRST_MESSAGES.then(text) if hasher is _FIRST_HASHER else hasher.then(text)
    return _finish(hasher, wire, tools_text(wire.get("tools")))


def canonical_key(canonical: dict[str, Any], message_texts: Sequence[str], tools_text: str | None) -> str:
    """request_key of a request already in canonical_request's form, given canonical_json of each of
    its messages and of its tools: the same key (KeyHasher, request_key's one definition) from texts
    a writer makes anyway, so a recorded call is not canonicalised and encoded a second time."""
    hasher = KeyHasher()
    for text in message_texts:
        hasher = hasher.then(text)
    return hasher.key(canonical["model"], canonical["params"], canonical["tool_choice"], tools_text)


def _finish(hasher: KeyHasher, wire: dict[str, Any], tools_text: str | None) -> str:
    return hasher.key(wire.get("model"), _params(wire), _drop_nulls(wire.get("tool_choice")), tools_text)


class ConversationKeys:
    """request_key for the growing requests of one conversation, each message's canonical text made once.

    A conversation's requests repeat its earlier messages (and its tools) in every call, so
    request_key's cost grows with the square of its length. This keeps the hash of the longest
    prefix of message objects the last request shared with this one (`is`, not equality) and hashes
    only the rest, with request_key's own pieces, so the key is request_key's. The caller owes one
    promise: a message or tools object it sent is never changed afterwards (tauproxy/tau2bench/loop.py
    builds each once); tests check the keys against request_key of the bodies as sent.
    """

    __slots__ = ("_hashers", "_messages", "_tools", "_tools_text")

    def __init__(self) -> None:
        self._messages: list[Any] = []
        self._hashers: list[KeyHasher] = [KeyHasher()]
        self._tools: Any = None
        self._tools_text: str | None = None

    def key(self, wire: dict[str, Any]) -> str:
        messages = wire.get("messages") or []
        shared = 0
        while shared < len(self._messages) and shared < len(messages) and messages[shared] is self._messages[shared]:
            shared += 1
        del self._messages[shared:]
        del self._hashers[shared + 1 :]
        for message in messages[shared:]:
            self._hashers.append(self._hashers[-1].then(canonical_json(canonical_message(message))))
            self._messages.append(message)
        tools = wire.get("tools")
        if tools is not self._tools or tools is None:
            self._tools, self._tools_text = tools, tools_text(tools)
        return _finish(self._hashers[-1], wire, self._tools_text)


class KeyHasher:
    """request_key, fed one message at a time: the hash of a request's key text up to its messages.

    The key hashes canonical_json({"key_version", "messages", "model", "params", "tool_choice",
    "tools"}); with sorted keys and no whitespace that text is the messages' canonical texts joined
    by commas inside a fixed frame, so it can be hashed as it is read. request_key is built on this,
    so a cassette that derives a stored request's key message by message (sharing the hash of a
    common prefix between the calls of a conversation) uses the one definition, never a second.
    `then` returns a new hasher; a hasher is never changed, so prefixes can be shared.
    """

    __slots__ = ("_empty", "_hash")

    def __init__(self) -> None:
        self._hash = hashlib.sha256(b'{"key_version":%d,"messages":[' % KEY_VERSION)
        self._empty = True

    @property
    def state(self) -> Any:
        """The hash of the messages so far: never updated (then and key copy it first)."""
        return self._hash

    @staticmethod
    def resumed(state: Any) -> KeyHasher:
        """The hasher whose `state` this is: of at least one message (the empty one is KeyHasher())."""
        hasher = KeyHasher.__new__(KeyHasher)
        hasher._hash = state
        hasher._empty = False
        return hasher

    def then(self, message_text: str) -> KeyHasher:
        """The hasher of the messages so far plus one message, given as canonical_json of its canonical form."""
        nxt = KeyHasher.__new__(KeyHasher)
        nxt._hash = self._hash.copy()
        nxt._hash.update((message_text if self._empty else "," + message_text).encode())
        nxt._empty = False
        return nxt

    def key(self, model: str | None, params: dict[str, Any], tool_choice: Any, tools_text: str | None) -> str:
        """The request key of these messages with the rest of the canonical request (tools as canonical JSON)."""
        tail = (
            f'],"model":{canonical_json(model)},"params":{canonical_json(params)},'
            f'"tool_choice":{canonical_json(tool_choice)},"tools":{tools_text or "null"}}}'
        )
        digest = self._hash.copy()
        digest.update(tail.encode())
        return digest.hexdigest()


class _FirstMessageHashers:
    """KeyHasher().then(text) for a request's first message, remembered by its text, bounded in characters.

    A harness's calls open with the same system prompt (τ²'s 15 KB airline policy, on every agent
    call): hashing it again costs a pass of sha256 over it, where the hash state after it is one
    dict read (the text comes from message_text's memo, whose hash the str keeps). The messages after
    it are a few hundred bytes each, cheaper to hash than to look up. An entry holds a text and a
    hash state, neither tracked by the garbage collector. Hash states are never changed (KeyHasher
    copies before it updates), so they can be shared; thread-safe for the same reasons as _TextMemo.
    """

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._states: dict[str, Any] = {}
        self._chars = 0

    def then(self, text: str) -> KeyHasher:
        state = self._states.get(text)
        if state is not None:
            return KeyHasher.resumed(state)
        hasher = _FIRST_HASHER.then(text)
        if self._chars + len(text) > self._max_chars:
            self._states = {}
            self._chars = 0
        self._states[text] = hasher.state
        self._chars += len(text)
        return hasher

    def clear(self) -> None:
        self._states = {}
        self._chars = 0


_FIRST_HASHER = KeyHasher()  # the hasher of no message yet, shared: a hasher is never changed
_FIRST_MESSAGES = _FirstMessageHashers(1 << 20)


def sample_key(key: str, seed: int | None, task_id: str, trial: int, occurrence: int) -> str:
    """Identity of one sample: the request key, its seed, the trial scope and the occurrence number."""
    body = {
        "key_version": KEY_VERSION,
        "key": key,
        "seed": seed,
        "scope": [task_id, trial],
        "occurrence": occurrence,
    }
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def message_hash(message: dict[str, Any]) -> str:
    """Content address of one canonical message (the cassette stores each message once)."""
    return hashlib.sha256(canonical_json(canonical_message(message)).encode()).hexdigest()


def blob_hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def seed_of(wire: dict[str, Any]) -> int | None:
    seed = wire.get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


class TrialScope(BaseModel):
    """The scope that sample identity counts occurrences in: one trial of one task."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    trial: int

    @property
    def names_a_trial(self) -> bool:
        """False for the fixed scope of requests that name no trial (SERVE_SCOPE): not a real trial."""
        return self != SERVE_SCOPE


# The scope of every request that names no trial (`identify_unscoped`; serve/identity.py says when
# such a request is counted).
SERVE_SCOPE = TrialScope(task_id="serve", trial=0)


class SampleIdentity(BaseModel):
    """Which sample a call is: its request key plus seed, scope and occurrence, and their hash."""

    model_config = ConfigDict(frozen=True)

    key: str
    seed: int | None
    scope: TrialScope
    occurrence: int
    sample_key: str


@dataclass(frozen=True)
class CallSlot:
    """The place of one call in its scope: its occurrence of its key, and its index among all calls."""

    occurrence: int
    call_index: int


class Occurrences:
    """Hands out occurrence numbers per (scope, key), in claim order; thread-safe.

    A number given back (the attempt failed, nothing was recorded under it) is handed out again
    before any new one, so a client's retry after an error is the same sample as the first try.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next: dict[TrialScope, Counter[str]] = {}
        self._returned: dict[tuple[TrialScope, str], set[int]] = {}
        self._calls: Counter[TrialScope] = Counter()

    def take(self, scope: TrialScope, key: str) -> CallSlot:
        with self._lock:
            call_index = self._calls[scope]
            self._calls[scope] += 1
            returned = self._returned.get((scope, key))
            if returned:
                occurrence = min(returned)
                returned.discard(occurrence)
                return CallSlot(occurrence, call_index)
            counter = self._next.setdefault(scope, Counter())
            occurrence = counter[key]
            counter[key] += 1
            return CallSlot(occurrence, call_index)

    def give_back(self, identity: SampleIdentity) -> None:
        """The call under this identity failed and recorded nothing: its number is free again."""
        with self._lock:
            self._returned.setdefault((identity.scope, identity.key), set()).add(identity.occurrence)


def identify(
    wire: dict[str, Any], scope: TrialScope, occurrences: Occurrences | None, keys: ConversationKeys | None = None
) -> tuple[SampleIdentity, int]:
    """The sample identity of a request body (without connection settings) and its call index.

    With `occurrences`, claims the request's next occurrence in `scope` now: callers identify each
    call exactly once, in the order the calls are made. Without (a seeded request that names no
    trial, `identify_unscoped`), every identical request is occurrence 0: one sample per distinct
    request, whatever order requests arrive in. `keys`, for
    the requests of one conversation, computes the same key without rehashing what they share.
    """
    key = request_key(wire) if keys is None else keys.key(wire)
    seed = seed_of(wire)
    slot = occurrences.take(scope, key) if occurrences is not None else CallSlot(0, 0)
    identity = SampleIdentity(
        key=key,
        seed=seed,
        scope=scope,
        occurrence=slot.occurrence,
        sample_key=sample_key(key, seed, scope.task_id, scope.trial, slot.occurrence),
    )
    return identity, slot.call_index


def identify_unscoped(
    wire: dict[str, Any], keys: ConversationKeys | None = None, draws: Occurrences | None = None
) -> tuple[SampleIdentity, int]:
    """The sample identity of a request that names no trial, and its call index (always 0).

    `tauproxy serve` without a scope header and τ²-bench's own calls through the bridge both
    identify this way, in SERVE_SCOPE, so one cassette serves both. A request with a seed is one
    sample per (key, seed), always occurrence 0: the seed is the caller's sample signal. One without
    is a fresh draw each time: with `draws` (a session of serve's, unless a seeded harness's) it claims its
    next occurrence there, in arrival order; without, occurrence 0. serve/identity.py says why.
    """
    identity, _ = identify(wire, SERVE_SCOPE, draws if seed_of(wire) is None else None, keys)
    return identity, 0
