"""Cassette upkeep behind `tauproxy cassette ...`: stats, verify, merge, prune, compact.

Every rewrite (merge, prune, compact) happens under the cassette's file lock and is atomic: the new
file is written beside the old one, fsynced, and renamed over it, so a reader sees the old file or
the new one, never a half-written one, and a writer that loaded the old file notices the new inode
and re-reads before appending.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tauproxy.data_model.key import request_key, sample_key
from tauproxy.errors import CassetteError, ConfigError
from tauproxy.store.cassette import Cassette, fsync_dir, locked
from tauproxy.store.entry import ENTRY_VERSION, CassetteEntry
from tauproxy.store.format import (
    CALLS_FILE,
    encode_blob_text,
    encode_call,
    encode_msg_text,
    encode_node,
    node_hash,
    short_ref,
)

RESULTS_FILE = "results.json"


@dataclass
class VerifyReport:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class RewriteResult:
    """What a rewrite did: entries kept, lines before and after, damaged lines dropped."""

    entries: int
    lines_before: int
    lines_after: int
    dropped_bad: int = 0
    added: int = 0
    replaced: int = 0
    removed: int = 0


def stats(cassette: Cassette) -> dict[str, Any]:
    roles = {"agent": 0, "user": 0, "judge": 0}
    models: dict[str, int] = {}
    tokens = {"prompt": 0, "completion": 0, "cached": 0, "reasoning": 0, "total": 0}
    entries = 0
    costs: list[float] = []
    for entry in cassette.iter_entries():  # one at a time: a cassette may be far larger than memory
        entries += 1
        if entry.cost_usd is not None:
            costs.append(entry.cost_usd)
        roles[entry.role] = roles.get(entry.role, 0) + 1
        model = entry.request.model or "?"
        models[model] = models.get(model, 0) + 1
        usage = entry.usage
        tokens["prompt"] += usage.prompt_tokens
        tokens["completion"] += usage.completion_tokens
        tokens["cached"] += usage.cached_tokens
        tokens["reasoning"] += usage.reasoning_tokens
        tokens["total"] += usage.total_tokens
    return {
        "entries": entries,
        "calls_by_role": roles,
        "tokens": tokens,
        "recorded_cost_usd": sum(costs) if costs else None,
        "unknown_price_calls": entries - len(costs),
        "models": dict(sorted(models.items())),
        "messages_stored": cassette.messages_stored(),
        "nodes_stored": cassette.nodes_stored(),
        "bytes": cassette.file.stat().st_size if cassette.file.exists() else 0,
        "index_bytes": cassette.index_bytes(),
        "problems": len(cassette.problems),
    }


def check(cassette: Cassette) -> VerifyReport:
    """Problems and warnings of what is on disk now (the file is re-read, not the loaded copy)."""
    fresh = Cassette.open(cassette.directory, create=False, fresh_index=True)
    report = VerifyReport(problems=[str(problem) for problem in fresh.problems])
    for number, entry in fresh.iter_history():
        mismatch = _key_mismatch(fresh, entry)
        if mismatch:
            report.problems.append(f"{fresh.file}:{number}: {mismatch}")
    for key, lines in fresh.recorded_more_than_once():
        answers = {(e.response.message, e.response.finish_reason) for _, e in lines}
        if len(answers) > 1:
            numbers = ", ".join(str(number) for number, _ in lines)
            report.warnings.append(
                f"{fresh.file}:{lines[-1][0]}: sample {key[:12]} was recorded {len(lines)} times with "
                f"different responses (lines {numbers}); the last one wins"
            )
    return report


def _key_mismatch(cassette: Cassette, entry: CassetteEntry) -> str | None:
    if request_key(cassette.request_of(entry)) != entry.key:
        return f"call {entry.sample_key[:12]}: key {entry.key[:12]} is not the key of its request"
    expected = sample_key(entry.key, entry.seed, entry.task_id, entry.trial, entry.occurrence)
    if expected != entry.sample_key:
        return f"call {entry.sample_key[:12]}: sample key does not match its key, seed and scope"
    return None


def verify(cassette: Cassette) -> list[str]:
    """Every problem as "PATH:LINE: reason"; empty when the cassette is sound."""
    return check(cassette).problems


def _refuse_damage(cassette: Cassette, drop_bad: bool) -> None:
    if cassette.problems and not drop_bad:
        raise CassetteError(
            f"{cassette.problems[0]} — refusing to rewrite a cassette with {len(cassette.problems)} "
            "damaged line(s), which the rewrite would drop; fix them or pass --drop-bad"
        )


class _SpillMap:
    """A str -> str map that keeps at most `limit` items in memory and the rest in a temp SQLite file,
    so rewriting a cassette of millions of calls needs bounded memory. Keys are set once."""

    def __init__(self, directory: Path, limit: int = 200_000) -> None:
        self._memory: dict[str, str] = {}
        self._directory, self._limit = directory, limit
        self._db: sqlite3.Connection | None = None

    def get(self, key: str) -> str | None:
        value = self._memory.get(key)
        if value is not None or self._db is None:
            return value
        row = self._db.execute("SELECT v FROM m WHERE k = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __setitem__(self, key: str, value: str) -> None:
        self._memory[key] = value
        if len(self._memory) > self._limit:
            if self._db is None:
                self._db = sqlite3.connect(str(self._directory / "rewrite.sqlite"), isolation_level=None)
                self._db.executescript(
                    "PRAGMA synchronous = OFF; PRAGMA journal_mode = OFF; "
                    "CREATE TABLE m (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID;"
                )
            self._db.executemany("INSERT OR REPLACE INTO m VALUES (?, ?)", self._memory.items())
            self._memory.clear()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


class _Rewriter:
    """Lines of a current-format cassette holding the given entries: each entry's new messages, blobs
    and chain nodes right before its call line, each written once, under its short reference (its
    full hash when another content of the output has that short reference: see format.py).

    Only what the entries reach is written, so superseded calls and what only they used are dropped.
    Older entries are rewritten in the current format. The lines are produced one at a time (a
    cassette can be far larger than memory); what was written is remembered by reference.

    A clash is only seen when its second content comes, after the first was referred to by the short
    reference both share, which the output would then hold as ambiguous. So `clashed` collects the
    short references that clashed, and the caller writes the output again with every content under
    them (`full`) referred to by its full hash. Clashes are rare: a second pass almost never runs.
    """

    def __init__(self, scratch: Path, full: frozenset[str] = frozenset()) -> None:
        # "KIND SHORT" -> full hash written under SHORT; "SOURCE REF" -> node reference written for the
        # node REF of source SOURCE. Both bounded in memory (see _SpillMap).
        self.written = _SpillMap(scratch)
        self.count = 0
        self.full = full
        self.clashed: set[str] = set()

    def _ref(self, kind: str, full: str) -> tuple[str, bool]:
        """(reference to write, whether it is new)."""
        short = short_ref(full)
        if f"{kind} {short}" in self.full:
            fresh = f"{kind} {full}" not in self.written
            self.written[f"{kind} {full}"] = full
            return full, fresh
        known = self.written.get(f"{kind} {short}")
        if known is None:
            self.written[f"{kind} {short}"] = full
            return short, True
        if known == full:
            return short, False
        self.clashed.add(f"{kind} {short}")
        fresh = f"{kind} {full}" not in self.written
        self.written[f"{kind} {full}"] = full  # a clash of short references in the output: full hash
        return full, fresh

    def _content(self, kind: str, text: str) -> tuple[str, str | None]:
        full = hashlib.sha256(text.encode()).hexdigest()
        ref, new = self._ref(kind, full)
        if not new:
            return ref, None
        return ref, (encode_msg_text(ref, text) if kind == "msg" else encode_blob_text(ref, text))

    def _node(self, parent: str | None, message: str) -> tuple[str, str | None]:
        ref, new = self._ref("node", node_hash(parent, message))
        return ref, (encode_node(parent, message) if new else None)

    def lines(self, sources: Iterable[tuple[Cassette, CassetteEntry]]) -> Iterator[str]:
        source_ids: dict[int, int] = {}
        for cassette, entry in sources:
            source = source_ids.setdefault(id(cassette), len(source_ids))
            out: list[str] = []
            if entry.request.messages is not None:  # v1: a listed message per message
                steps: list[tuple[str | None, str]] = [(None, digest) for digest in entry.request.messages]
                parent: str | None = None
            else:
                steps, parent = self._unwritten_chain(cassette, source, entry.request.chain)
            for node_in, message in steps:
                ref, line = self._content("msg", cassette.message_text(message))
                out += [line] if line else []
                parent, node_line = self._node(parent, ref)
                out += [node_line] if node_line else []
                if node_in is not None and parent is not None:
                    self.written[f"{source} {node_in}"] = parent
            reply, line = self._content("msg", cassette.message_text(entry.response.message))
            out += [line] if line else []
            blobs: dict[str, str | None] = {}
            for blob in (entry.request.tools, entry.response.raw):
                if blob is not None:
                    blobs[blob], line = self._content("blob", cassette.blob_text(blob))
                    out += [line] if line else []
            request = entry.request.model_copy(
                update={
                    "messages": None,
                    "chain": parent,
                    "tools": blobs.get(entry.request.tools) if entry.request.tools else None,
                }
            )
            response = entry.response.model_copy(
                update={
                    "message": reply,
                    "raw": blobs.get(entry.response.raw) if entry.response.raw else None,
                }
            )
            out.append(
                encode_call(entry.model_copy(update={"v": ENTRY_VERSION, "request": request, "response": response}))
            )
            self.count += len(out)
            yield "".join(out)

    def _unwritten_chain(
        self, cassette: Cassette, source: int, digest: str | None
    ) -> tuple[list[tuple[str | None, str]], str | None]:
        """The (node, message) steps of a chain after its last node already written, and that node's
        written reference (None: nothing written yet)."""
        steps: list[tuple[str | None, str]] = []
        written: str | None = None
        while digest is not None:
            written = self.written.get(f"{source} {digest}")
            if written is not None:
                break
            parent, message = cassette.node(digest)
            steps.append((digest, message))
            digest = parent
        steps.reverse()
        return steps, written


def _write_beside(target: Path, lines: Iterable[str]) -> Path:
    """Write `lines` to a temp file beside `target` and fsync it; the caller renames it over `target`."""
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".calls.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as handle:
            for line in lines:
                handle.write(line.encode("utf-8"))
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise CassetteError(f"cannot rewrite {target}: {exc.strerror or exc}") from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return Path(temp)


def _publish(temp: Path, target: Path) -> None:
    """Rename the finished temp file over `target` and make that durable."""
    try:
        os.replace(temp, target)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise CassetteError(f"cannot rewrite {target}: {exc.strerror or exc}") from None
    fsync_dir(target.parent)


def _line_count(path: Path) -> int:
    if not path.exists():
        return 0
    count = 0
    with path.open("rb") as handle:
        for raw in handle:
            count += bool(raw.strip())
    return count


def _rewrite(cassette: Cassette, sources: Callable[[], Iterable[tuple[Cassette, CassetteEntry]]]) -> RewriteResult:
    """Rewrite the cassette's file with the entries `sources()` yields (called again for a second pass)."""
    before = _line_count(cassette.file)
    entries = 0

    def counted() -> Iterator[tuple[Cassette, CassetteEntry]]:
        nonlocal entries
        entries = 0
        for source in sources():
            entries += 1
            yield source

    full: frozenset[str] = frozenset()
    while True:
        with tempfile.TemporaryDirectory(prefix="tauproxy-rewrite-") as scratch:
            rewriter = _Rewriter(Path(scratch), full)
            try:
                temp = _write_beside(cassette.file, rewriter.lines(counted()))
            finally:
                rewriter.written.close()
        if not rewriter.clashed:
            break
        temp.unlink()
        # Again with those under their full hash (nodes over them then hash anew, and may clash anew).
        full |= rewriter.clashed
    _publish(temp, cassette.file)
    return RewriteResult(
        entries=entries,
        lines_before=before,
        lines_after=rewriter.count,
        dropped_bad=len(cassette.problems),
    )


def compact(cassette_dir: Path, drop_bad: bool = False) -> RewriteResult:
    """Rewrite calls.jsonl with the winning entry per sample key and only the content they reach."""
    if not (Path(cassette_dir) / CALLS_FILE).exists():  # fail before locking creates a directory
        raise CassetteError(f"no cassette at {cassette_dir} (no {CALLS_FILE})")
    with locked(Path(cassette_dir)):
        cassette = Cassette.open(Path(cassette_dir), create=False)
        _refuse_damage(cassette, drop_bad)
        return _rewrite(cassette, lambda: ((cassette, entry) for entry in cassette.iter_entries()))


def prune(cassette: Cassette, keep_sample_keys: set[str], drop_bad: bool = False) -> int:
    """Drop every entry whose sample key is not in `keep_sample_keys`; the number removed."""
    with locked(cassette.directory):
        fresh = Cassette.open(cassette.directory, create=False)
        _refuse_damage(fresh, drop_bad)
        kept = {key for key in keep_sample_keys if fresh.lookup(key) is not None}
        removed = len(fresh) - len(kept)
        if removed:
            _rewrite(fresh, lambda: ((fresh, entry) for entry in fresh.iter_entries(only=kept)))
    cassette.reload()
    return removed


def merge(target_dir: Path, source_dirs: list[Path], drop_bad: bool = False) -> RewriteResult:
    """Union of the target and the sources into the target; for a shared sample key the last source wins."""
    target_dir = Path(target_dir)
    Cassette.open(target_dir, create=True)  # the lock file needs the directory
    with locked(target_dir):
        target = Cassette.open(target_dir, create=True)
        sources = [Cassette.open(Path(d), create=False) for d in source_dirs]
        for cassette in [target, *sources]:
            _refuse_damage(cassette, drop_bad)
        # Only which cassette wins each sample key is held; entries are read again while writing.
        everyone = [target, *sources]
        winners: dict[str, int] = dict.fromkeys(target.sample_keys(), 0)
        added = replaced = 0
        for number, source in enumerate(sources, start=1):
            for key in source.sample_keys():
                previous = winners.get(key)
                added += previous is None
                if previous is not None:
                    before, entry = everyone[previous].lookup(key), source.lookup(key)
                    if before is not None and entry is not None:  # compared as answered: refs may be v2 or v3
                        replaced += everyone[previous].response_of(before) != source.response_of(entry)
                winners[key] = number

        def merged() -> Iterator[tuple[Cassette, CassetteEntry]]:
            for number, cassette in enumerate(everyone):
                for entry in cassette.iter_entries():
                    if winners[entry.sample_key] == number:
                        yield cassette, entry

        result = _rewrite(target, merged)
    result.added, result.replaced = added, replaced
    result.dropped_bad = sum(len(c.problems) for c in [target, *sources])
    return result


def sample_keys_used(results_paths: list[Path]) -> set[str]:
    """Every `simulations[].calls[].sample_key` in tauproxy results files (or run dirs holding one)."""
    keys: set[str] = set()
    for given in results_paths:
        path = Path(given) / RESULTS_FILE if Path(given).is_dir() else Path(given)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read results file {path}: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path} is not a tauproxy results file (not a JSON object)")
        for simulation in data.get("simulations") or []:
            for call in simulation.get("calls") or []:
                if isinstance(call, dict) and isinstance(call.get("sample_key"), str):
                    keys.add(call["sample_key"])
    return keys
