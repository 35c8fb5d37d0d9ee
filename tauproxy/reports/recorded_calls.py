"""The recorded request and response of each model call of a run, read from the run's cassette.

The results keep what a call cost and where its answer came from (`CallRecord`); the bodies sit in
the cassette the run recorded into (`RunInfo.cassette`), found by each call's sample key. The
cassette is opened read-only (`create=False`) and every body is masked (tauproxy.redact) before
anything shows it. `RunInfo.cassette` is the path as the run was given it, so a relative one is
looked for from the working directory, then from the run's own file and the folders above it.
When there is no cassette, or a call is not in it, `absence` says so in one line. A run made through
`tauproxy serve` names no cassette; `report --cassette DIR` gives serve's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.result import Results
from tauproxy.errors import CassetteError, ConfigError
from tauproxy.redact import Redactor
from tauproxy.results.provenance import sources_of
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import CALLS_FILE


class RecordedCall(BaseModel):
    """One call as the cassette holds it, secrets masked: the canonical request
    ({model, messages, tools, tool_choice, **params}) and the chat-completions answer.

    `message_keys` and `tools_key` are the cassette's content hashes of the request's messages and
    tools: equal hashes, equal content, so a page can store each once without comparing them.
    """

    request: dict[str, Any]
    response: dict[str, Any]
    message_keys: list[str] = []
    tools_key: str | None = None


class RecordedCalls(BaseModel):
    """The bodies of a run's calls by sample key, and where they were read from (or why not)."""

    cassette: str | None = None
    problem: str | None = None
    by_sample_key: dict[str, RecordedCall] = {}

    def of(self, call: CallRecord) -> RecordedCall | None:
        return self.by_sample_key.get(call.sample_key)

    def absence(self, call: CallRecord) -> str:
        """Why a call has no body to show, in one line."""
        if self.problem is not None:
            return self.problem
        return f"not in the cassette {self.cassette} (sample key {call.sample_key[:12]})"


def read_recorded_calls(results: Results, cassette_dir: Path | None = None) -> RecordedCalls:
    """The bodies of the run's calls from `cassette_dir` when given (a run made through `tauproxy
    serve` names none: its calls are in serve's cassette), else from the cassette the run names."""
    if cassette_dir is not None:
        directory = find_cassette(str(cassette_dir), [])
        if directory is None:
            raise ConfigError(f"{cassette_dir}: no cassette there (no {CALLS_FILE})")
    else:
        recorded = results.info.cassette
        if recorded is None:
            return RecordedCalls(
                problem="the run recorded no cassette (for a run made through serve, give report --cassette)"
            )
        directory = find_cassette(recorded, sources_of(results))
        if directory is None:
            return RecordedCalls(problem=f"the run's cassette {recorded} is not found (report --cassette names it)")
    try:
        cassette = Cassette.open(directory, create=False)
    except (CassetteError, OSError) as exc:
        return RecordedCalls(problem=f"the run's cassette {directory} cannot be read: {exc}")
    reading = _Reading(cassette)
    found: dict[str, RecordedCall] = {}
    try:
        for run in results.simulations:
            for call in run.calls:
                if call.sample_key in found:
                    continue
                entry = cassette.lookup(call.sample_key)
                if entry is None:
                    continue
                try:
                    found[call.sample_key] = reading.call(entry)
                except CassetteError:
                    continue  # content the entry refers to is missing: shown as not in the cassette
    finally:
        cassette.close()
    return RecordedCalls(cassette=str(directory), by_sample_key=found)


class _Reading:
    """Reads calls with each stored message and tool list loaded and masked once: the requests of a
    trial repeat its conversation and every request repeats the tools, so reading each request whole
    (`Cassette.request_of`) would load and mask the same content over and over."""

    def __init__(self, cassette: Cassette) -> None:
        self._reader = cassette.reader
        self._redactor = Redactor()
        self._messages: dict[str, Any] = {}
        self._blobs: dict[str, Any] = {}

    def call(self, entry: CassetteEntry) -> RecordedCall:
        # The same fields, in the same order, as CassetteReader.request_of.
        stored = entry.request
        keys = self._reader.message_hashes(entry)
        request: dict[str, Any] = {"model": stored.model, "messages": [self._message(key) for key in keys]}
        if stored.tools is not None:
            request["tools"] = self._blob(stored.tools)
        if stored.tool_choice is not None:
            request["tool_choice"] = self._redactor.value(stored.tool_choice)
        request.update(self._redactor.value(stored.params))
        response = self._redactor.value(self._reader.response_of(entry))
        return RecordedCall.model_construct(
            request=request, response=response, message_keys=keys, tools_key=stored.tools
        )

    def _message(self, key: str) -> Any:
        if key not in self._messages:
            self._messages[key] = self._redactor.value(self._reader.message(key))
        return self._messages[key]

    def _blob(self, key: str) -> Any:
        if key not in self._blobs:
            self._blobs[key] = self._redactor.value(self._reader.blob(key))
        return self._blobs[key]


def find_cassette(recorded: str, sources: list[str]) -> Path | None:
    """The cassette directory a run names: as written when absolute, else from the working
    directory, then from each source file's folder and those above it (a run is often reported
    from elsewhere than where it ran)."""
    path = Path(recorded)
    if path.name == CALLS_FILE:
        path = path.parent
    if path.is_absolute():
        return path if (path / CALLS_FILE).is_file() else None
    bases = [Path.cwd()]
    for source in sources:
        bases.extend([Path(source).absolute(), *Path(source).absolute().parents])
    for base in dict.fromkeys(bases):
        if (base / path / CALLS_FILE).is_file():
            return base / path
    return None
