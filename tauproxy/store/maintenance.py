"""Cassette upkeep behind `tauproxy cassette ...`: stats, verify, merge, prune, compact.

Every rewrite (merge, prune, compact) happens under the cassette's file lock and is atomic: the new
file is written beside the old one, fsynced, and renamed over it, so a reader sees the old file or
the new one, never a half-written one, and a writer that loaded the old file notices the new inode
and re-reads before appending.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tauproxy.data_model.key import request_key, sample_key
from tauproxy.errors import CassetteError, ConfigError
from tauproxy.store.cassette import Cassette, fsync_dir, locked
from tauproxy.store.entry import ENTRY_VERSION, CassetteEntry
from tauproxy.store.format import (
    CALLS_FILE,
    chain_nodes,
    encode_blob_text,
    encode_call,
    encode_msg_text,
    encode_node,
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
    entries = cassette.entries()
    roles = {"agent": 0, "user": 0, "judge": 0}
    models: dict[str, int] = {}
    tokens = {"prompt": 0, "completion": 0, "cached": 0, "reasoning": 0, "total": 0}
    for entry in entries:
        roles[entry.role] = roles.get(entry.role, 0) + 1
        model = entry.request.model or "?"
        models[model] = models.get(model, 0) + 1
        usage = entry.usage
        tokens["prompt"] += usage.prompt_tokens
        tokens["completion"] += usage.completion_tokens
        tokens["cached"] += usage.cached_tokens
        tokens["reasoning"] += usage.reasoning_tokens
        tokens["total"] += usage.total_tokens
    costs = [entry.cost_usd for entry in entries if entry.cost_usd is not None]
    return {
        "entries": len(entries),
        "calls_by_role": roles,
        "tokens": tokens,
        "recorded_cost_usd": sum(costs) if costs else None,
        "unknown_price_calls": len(entries) - len(costs),
        "models": dict(sorted(models.items())),
        "messages_stored": cassette.messages_stored(),
        "nodes_stored": cassette.nodes_stored(),
        "bytes": cassette.file.stat().st_size if cassette.file.exists() else 0,
        "problems": len(cassette.problems),
    }


def check(cassette: Cassette) -> VerifyReport:
    """Problems and warnings of what is on disk now (the file is re-read, not the loaded copy)."""
    fresh = Cassette.open(cassette.directory, create=False)
    report = VerifyReport(problems=[str(problem) for problem in fresh.problems])
    by_sample: dict[str, list[tuple[int | None, CassetteEntry]]] = {}
    for number, entry in fresh.history():
        by_sample.setdefault(entry.sample_key, []).append((number, entry))
        mismatch = _key_mismatch(fresh, entry)
        if mismatch:
            report.problems.append(f"{fresh.file}:{number}: {mismatch}")
    for key, lines in by_sample.items():
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


def _lines(sources: Iterable[tuple[Cassette, CassetteEntry]]) -> list[str]:
    """Each entry's new messages, blob and chain nodes right before its call line, each written once.

    Only what the entries reach is written, so superseded calls and what only they used are dropped.
    Version-1 entries (a listed message per message) are rewritten as v2 chains.
    """
    lines: list[str] = []
    messages: set[str] = set()
    blobs: set[str] = set()
    nodes: set[str] = set()
    for cassette, entry in sources:
        if entry.request.messages is not None:
            chain = chain_nodes(entry.request.messages)
            request = entry.request.model_copy(update={"messages": None, "chain": chain[-1][0] if chain else None})
            entry = entry.model_copy(update={"v": ENTRY_VERSION, "request": request})
        else:
            chain = _unwritten_chain(cassette, entry.request.chain, nodes)
        new = [node for node in chain if node[0] not in nodes]
        for digest in [*(message for _, _, message in new), entry.response.message]:
            if digest not in messages:
                messages.add(digest)
                lines.append(encode_msg_text(digest, cassette.message_text(digest)))
        for blob in (entry.request.tools, entry.response.raw):
            if blob is not None and blob not in blobs:
                blobs.add(blob)
                lines.append(encode_blob_text(blob, cassette.blob_text(blob)))
        for node in new:
            nodes.add(node[0])
            lines.append(encode_node(*node))
        lines.append(encode_call(entry))
    return lines


def _unwritten_chain(
    cassette: Cassette, digest: str | None, written: set[str]
) -> list[tuple[str, str | None, str]]:
    """The nodes of a chain after the last one already written, first message first."""
    chain: list[tuple[str, str | None, str]] = []
    while digest is not None and digest not in written:
        parent, message = cassette.node(digest)
        chain.append((digest, parent, message))
        digest = parent
    chain.reverse()
    return chain


def _replace_file(target: Path, lines: list[str]) -> None:
    """Write `lines` to a temp file beside `target`, fsync, rename over it, fsync the directory."""
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".calls.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write("".join(lines).encode("utf-8"))
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise CassetteError(f"cannot rewrite {target}: {exc.strerror or exc}") from None
    fsync_dir(target.parent)


def _line_count(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(1 for raw in path.read_bytes().split(b"\n") if raw.strip())


def _rewrite(cassette: Cassette, sources: list[tuple[Cassette, CassetteEntry]]) -> RewriteResult:
    before = _line_count(cassette.file)
    lines = _lines(sources)
    _replace_file(cassette.file, lines)
    return RewriteResult(
        entries=len(sources),
        lines_before=before,
        lines_after=len(lines),
        dropped_bad=len(cassette.problems),
    )


def compact(cassette_dir: Path, drop_bad: bool = False) -> RewriteResult:
    """Rewrite calls.jsonl with the winning entry per sample key and only the content they reach."""
    if not (Path(cassette_dir) / CALLS_FILE).exists():  # fail before locking creates a directory
        raise CassetteError(f"no cassette at {cassette_dir} (no {CALLS_FILE})")
    with locked(Path(cassette_dir)):
        cassette = Cassette.open(Path(cassette_dir), create=False)
        _refuse_damage(cassette, drop_bad)
        return _rewrite(cassette, [(cassette, entry) for entry in cassette.entries()])


def prune(cassette: Cassette, keep_sample_keys: set[str], drop_bad: bool = False) -> int:
    """Drop every entry whose sample key is not in `keep_sample_keys`; the number removed."""
    with locked(cassette.directory):
        fresh = Cassette.open(cassette.directory, create=False)
        _refuse_damage(fresh, drop_bad)
        kept = [(fresh, entry) for entry in fresh.entries() if entry.sample_key in keep_sample_keys]
        removed = len(fresh) - len(kept)
        if removed:
            _rewrite(fresh, kept)
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
        winners: dict[str, tuple[Cassette, CassetteEntry]] = {
            e.sample_key: (target, e) for e in target.entries()
        }
        added = replaced = 0
        for source in sources:
            for entry in source.entries():
                previous = winners.pop(entry.sample_key, None)
                added += previous is None
                replaced += previous is not None and previous[1].response != entry.response
                winners[entry.sample_key] = (source, entry)
        result = _rewrite(target, list(winners.values()))
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
