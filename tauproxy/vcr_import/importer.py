"""Recorded vcrpy interactions written into a tauproxy cassette, keyed as serve keys a live call.

Nothing here computes a key. Each vcrpy cassette file is sent, interaction by interaction and in
file order, through serve's own app (in-process, over httpx's ASGI transport) in `auto` mode, as
if the test that recorded it ran once more against a fresh `tauproxy serve`; its live transport is
made as serve makes it (wire_apis.registry.live_transport) over `RecordedUpstream`, which answers
with the interaction's recorded response instead of calling a provider. So every part of a live
call applies unchanged, for every wire API serve speaks: the route (by request path, from the
registry), the request checks, the scope and role headers if the client sent them, sample identity,
role recognition, pricing and the recording itself (for an API passed through to its provider,
the recorded body's bytes, as a live answer's). One fresh server per file: a vcrpy cassette is one test's calls,
and a test replayed under tauproxy starts its own session too.

What becomes of an interaction (serve's run log says which for every call it answers):

    imported       the cassette lacked its sample: recorded, with the recorded response as its answer
    already there  the cassette holds its sample (a live recording, an earlier file or import): the
                   cassette's answer is kept, as serve in `auto` mode would replay it
    left out       listed, one line each: not a POST to a path serve answers (other hosts' APIs,
                   GETs), a failed call (status not 2xx), a request serve refuses (its 4xx message),
                   a response that is not that API's answer (a stream that cannot be assembled,
                   a body that is not JSON), or the same sample as an earlier interaction of the
                   same file (serve answers both with the earlier one's answer: the later answer
                   has no place)
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tauproxy.data_model.call import ModelCall
from tauproxy.data_model.completion import Completion
from tauproxy.errors import ModelCallError
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.results.run_log import RunLogLine
from tauproxy.serve.app import ServeApp
from tauproxy.serve.completions import CompletionService
from tauproxy.serve.config import DEFAULT_MAX_BODY_BYTES, DEFAULT_READ_TIMEOUT_S
from tauproxy.serve.identity import Sessions
from tauproxy.serve.runlog import RunLog
from tauproxy.store.cassette import Cassette
from tauproxy.vcr_import.chat_answer import chat_answer
from tauproxy.vcr_import.native_answer import NATIVE_BODY_READERS
from tauproxy.vcr_import.streams import UnreadableAnswer
from tauproxy.vcr_import.vcr_file import RecordedExchange, read_vcr_file
from tauproxy.wire_apis.base import WireApi
from tauproxy.wire_apis.registry import api_for_path, live_transport

# Request headers that describe the recorded connection, not the request: never replayed into serve.
CONNECTION_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "accept-encoding"})
BASE_URL = "http://tauproxy-import"
CHAT_API = "chat"  # through litellm, which answers a chat.completion (RecordedUpstream.complete)


@dataclass(frozen=True)
class LeftOut:
    """One interaction not imported, and why."""

    where: str  # FILE#N METHOD URL
    reason: str

    def line(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass
class ImportReport:
    """What an import did: every interaction read is imported, already there, or left out (one line)."""

    files: int = 0
    interactions: int = 0
    imported: int = 0
    already_there: int = 0
    left_out: list[LeftOut] = field(default_factory=list)


class RecordedUpstream:
    """The upstreams of an import: the recorded answer of the interaction being imported.

    Serve's live transport is made as serve makes it (`live_transport`), over these two: `chat` in
    litellm's place (it answers the chat.completion a recorded chat response holds) and `native`, the
    httpx transport under the pass-through of every other API (it answers the recorded body's bytes).
    """

    def __init__(self) -> None:
        self.chat: dict[str, Any] | None = None
        self.native: bytes | None = None

    def complete(self, call: ModelCall) -> Completion:
        if self.chat is None:  # every chat interaction sets one before it is sent; a bug otherwise
            raise ModelCallError(f"{call.model}: no recorded answer", code="upstream_unreachable")
        return Completion(body=json.loads(json.dumps(self.chat)), source="live", latency_s=0.0)

    def native_answer(self, request: httpx.Request) -> httpx.Response:
        if self.native is None:
            return httpx.Response(502, json={"error": {"message": "no recorded answer"}})
        return httpx.Response(200, content=self.native, headers={"content-type": "application/json"})

    def clear(self) -> None:
        self.chat = self.native = None

    def close(self) -> None:
        return None


class OutcomeLog(RunLog):
    """Serve's run log kept in memory: the source (live, replay, shared) of each call answered."""

    def __init__(self) -> None:  # no file: nothing of an import is written but the cassette
        self.lines: list[RunLogLine] = []

    def write(self, line: RunLogLine) -> None:
        self.lines.append(line)

    def close(self) -> None:
        return None


def import_vcr_files(files: list[Path], into: Path, pricing: Pricing | None = None) -> ImportReport:
    """Import every interaction of `files` (vcrpy cassettes, read first, all of them) into the
    cassette at `into` (created if absent). A file vcrpy cannot read is a ConfigError before
    anything is written."""
    recorded = [read_vcr_file(path) for path in files]
    cassette = Cassette.open(into, create=True)
    report = ImportReport(files=len(files))
    try:
        for exchanges in recorded:
            asyncio.run(_import_file(exchanges, cassette, pricing or Pricing(), report))
    finally:
        cassette.close()
    return report


async def _import_file(
    exchanges: list[RecordedExchange],
    cassette: Cassette,
    pricing: Pricing,
    report: ImportReport,
) -> None:
    upstream = RecordedUpstream()
    outcomes = OutcomeLog()
    native = httpx.Client(transport=httpx.MockTransport(upstream.native_answer))
    live = live_transport(upstream, native)
    # One session per file, whatever the gaps between its interactions: a recording is one run.
    service = CompletionService(
        RecordMode.AUTO, cassette, live, pricing, run_log=outcomes, sessions=Sessions(idle_s=None)
    )
    app = ServeApp(
        service,
        auth_token=None,
        max_body_bytes=DEFAULT_MAX_BODY_BYTES,
        read_timeout_s=DEFAULT_READ_TIMEOUT_S,
        model_names=list,
        describe={},
    ).starlette()
    first_seen: dict[str, str] = {}  # sample key -> "#N", the interaction of this file imported under it
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
            for exchange in exchanges:
                report.interactions += 1
                reason = await _send(client, exchange, upstream, outcomes, report, first_seen)
                if reason is not None:
                    report.left_out.append(LeftOut(exchange.where, reason))
    finally:
        service.close()  # its call threads: one service per imported file
        native.close()


async def _send(
    client: httpx.AsyncClient,
    exchange: RecordedExchange,
    upstream: RecordedUpstream,
    outcomes: OutcomeLog,
    report: ImportReport,
    first_seen: dict[str, str],
) -> str | None:
    """Send one interaction through serve; None when it was imported or was already there, else why not."""
    found = route_of(exchange)
    if found is None:
        return "not a model call tauproxy serve answers (no POST route for this path)"
    api, path = found
    if not 200 <= exchange.status < 300:
        return f"failed call (HTTP {exchange.status}): nothing to replay"
    try:
        _set_answer(upstream, api, exchange)
    except UnreadableAnswer as exc:
        return f"response cannot be read: {exc}"
    answered = len(outcomes.lines)
    headers = {name: value for name, value in exchange.request_headers.items() if name not in CONNECTION_HEADERS}
    try:
        response = await client.post(path, content=exchange.request_body, headers=headers)
    finally:
        upstream.clear()
    if response.status_code != 200:
        return f"request refused by serve ({response.status_code}: {_error_message(response)})"
    outcome = outcomes.lines[answered] if len(outcomes.lines) > answered else None
    if outcome is None or outcome.sample_key is None:
        return "serve answered it without a run log line (a bug in tauproxy): left out"
    if outcome.source == "live":
        report.imported += 1
        first_seen[outcome.sample_key] = f"#{exchange.number}"
        return None
    earlier = first_seen.get(outcome.sample_key)
    if earlier is None:
        report.already_there += 1
        return None
    return f"the same sample as {earlier} of this file: serve answers both with {earlier}'s answer"


def _set_answer(upstream: RecordedUpstream, api: WireApi, exchange: RecordedExchange) -> None:
    """Give the import's upstream the recorded answer in every form serve's live transport may ask for:
    the body's bytes (a pass-through), and for chat completions also the chat.completion (litellm)."""
    reader = NATIVE_BODY_READERS.get(api.name)
    if reader is None:
        raise UnreadableAnswer(f"tauproxy cannot read recorded answers of the {api.name} API yet")
    content_type = exchange.response_headers.get("content-type", "")
    if api.name == CHAT_API:
        upstream.chat = chat_answer(exchange.response_body, content_type)
    upstream.native = reader(exchange.response_body, content_type)


def route_of(exchange: RecordedExchange) -> tuple[WireApi, str] | None:
    """The wire API an interaction called (by the path its URL ends with: a client's base URL may add
    a prefix) and a path serve answers it on; None for anything but a POST to one."""
    api = api_for_path(exchange.path) if exchange.method == "POST" else None
    return (api, api.paths[0]) if api is not None else None


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
    except ValueError:
        return response.text[:200]
    message = error.get("message") if isinstance(error, dict) else error
    return str(message)
