"""The line format of `calls.jsonl`, the one file of a cassette directory.

UTF-8, one JSON object per line, append-only, keys sorted, compact separators. Three kinds of line:

    {"t":"msg","h":HASH,"m":MESSAGE}     one canonical wire message; HASH = key.message_hash(MESSAGE)
    {"t":"blob","h":HASH,"v":VALUE}      one tools list; HASH = key.blob_hash(VALUE)
    {"t":"call", ...CassetteEntry}       one sample; its request and reply name messages and blobs by hash

Messages and blobs are content-addressed and written once per cassette, so a conversation recorded
call by call grows the file linearly. A message or blob may appear more than once (a git union merge
of two branches that both wrote it); the copies are identical by construction and readers keep one.
References are resolved after the whole file is read, so line order between kinds does not matter.

Lines are split on b"\\n" only: canonical JSON escapes newlines inside strings, but it leaves U+2028
and friends raw, which `str.splitlines` would wrongly treat as line ends.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tauproxy.errors import CassetteError
from tauproxy.proxy.key import blob_hash, canonical_json, message_hash
from tauproxy.store.entry import ENTRY_VERSION, CassetteEntry

CALLS_FILE = "calls.jsonl"
LOCK_FILE = "calls.jsonl.lock"


@dataclass(frozen=True)
class MsgLine:
    hash: str
    message: dict[str, Any]


@dataclass(frozen=True)
class BlobLine:
    hash: str
    value: Any


Line = MsgLine | BlobLine | CassetteEntry


@dataclass(frozen=True)
class CassetteProblem:
    """A line that could not be used; the rest of the cassette stays readable."""

    path: Path
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class ScanResult:
    lines: list[tuple[int, Line]] = field(default_factory=list)
    problems: list[CassetteProblem] = field(default_factory=list)
    size: int = 0


def encode_msg(digest: str, message: dict[str, Any]) -> str:
    return canonical_json({"t": "msg", "h": digest, "m": message}) + "\n"


def encode_blob(digest: str, value: Any) -> str:
    return canonical_json({"t": "blob", "h": digest, "v": value}) + "\n"


def encode_call(entry: CassetteEntry) -> str:
    return canonical_json({"t": "call", **entry.model_dump(mode="json")}) + "\n"


def encode_line(line: Line) -> str:
    if isinstance(line, MsgLine):
        return encode_msg(line.hash, line.message)
    if isinstance(line, BlobLine):
        return encode_blob(line.hash, line.value)
    return encode_call(line)


def parse_line(raw: bytes) -> Line:
    """One line, checked. ValueError names what is wrong; CassetteError means "upgrade tauproxy"."""
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
        return MsgLine(_checked_hash(obj, message_hash(message)), message)
    if kind == "blob":
        if "v" not in obj:
            raise ValueError("malformed blob line: no `v`")
        return BlobLine(_checked_hash(obj, blob_hash(obj["v"])), obj["v"])
    if kind == "call":
        return _parse_call(obj)
    raise ValueError(f"unknown line kind {kind!r}")


def _checked_hash(obj: dict[str, Any], actual: str) -> str:
    digest = obj.get("h")
    if not isinstance(digest, str):
        raise ValueError(f"malformed {obj['t']} line: no hash")
    if digest != actual:
        raise ValueError(
            f"{obj['t']} hash mismatch: line says {digest[:12]}, content hashes to {actual[:12]} (edited?)"
        )
    return digest


def _parse_call(obj: dict[str, Any]) -> CassetteEntry:
    version = obj.get("v", ENTRY_VERSION)
    if isinstance(version, int) and not isinstance(version, bool) and version > ENTRY_VERSION:
        raise CassetteError(
            f"entry format v{version} was written by a newer tauproxy (this one reads up to "
            f"v{ENTRY_VERSION}); upgrade tauproxy"
        )
    fields = {k: v for k, v in obj.items() if k != "t"}
    try:
        return CassetteEntry.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "entry"
        raise ValueError(f"malformed call line: {where}: {first['msg']}") from None


def scan_bytes(path: Path, data: bytes) -> ScanResult:
    """Every usable line of `data` with its 1-based number, and a problem for every other line."""
    result = ScanResult(size=len(data))
    chunks = data.split(b"\n")
    cut_last = chunks[-1] != b""  # no trailing newline: the last write may have been cut off
    for number, raw in enumerate(chunks, start=1):
        if not raw.strip():
            continue
        try:
            result.lines.append((number, parse_line(raw)))
        except CassetteError as exc:
            raise CassetteError(f"{path}:{number}: {exc}") from None
        except ValueError as exc:
            reason = str(exc)
            if cut_last and number == len(chunks):
                reason = f"truncated last line (a write was cut off): {reason}"
            result.problems.append(CassetteProblem(path, number, reason))
    return result


def scan_file(path: Path) -> ScanResult:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ScanResult()
    except OSError as exc:
        raise CassetteError(f"cannot read {path}: {exc.strerror or exc}") from None
    return scan_bytes(path, data)
