"""Cassette upkeep behind `tauproxy cassette ...`: stats, verify, merge, prune, compact.

Every rewrite (merge, prune, compact) happens under the cassette's file lock and is atomic: the new
file is written beside the old one, fsynced, and renamed over it, so a reader sees the old file or
the new one, never a half-written one, and a writer that loaded the old file notices the new inode
and re-reads before appending.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tauproxy.data_model.key import request_key, sample_key
from tauproxy.errors import CassetteError
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import CALLS_FILE
from tauproxy.store.locking import locked
from tauproxy.store.rewrite import RewriteResult, rewrite


@dataclass
class VerifyReport:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


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
        "messages_stored": cassette.inspector.messages_stored(),
        "nodes_stored": cassette.inspector.nodes_stored(),
        "bytes": cassette.file.stat().st_size if cassette.file.exists() else 0,
        "index_bytes": cassette.inspector.index_bytes(),
        "problems": len(cassette.problems),
    }


def check(cassette: Cassette) -> VerifyReport:
    """Problems and warnings of what is on disk now (the file is re-read, not the loaded copy)."""
    fresh = Cassette.open(cassette.directory, create=False, fresh_index=True)
    try:
        return _check_fresh(fresh)
    finally:
        fresh.close()  # and its private index (`cassette verify` may run in a long-lived process)


def _check_fresh(fresh: Cassette) -> VerifyReport:
    report = VerifyReport(problems=[str(problem) for problem in fresh.problems])
    for number, entry in fresh.inspector.iter_history():
        mismatch = _key_mismatch(fresh, entry)
        if mismatch:
            report.problems.append(f"{fresh.file}:{number}: {mismatch}")
    for key, lines in fresh.inspector.recorded_more_than_once():
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


def compact(cassette_dir: Path, drop_bad: bool = False) -> RewriteResult:
    """Rewrite calls.jsonl with the winning entry per sample key and only the content they reach."""
    if not (Path(cassette_dir) / CALLS_FILE).exists():  # fail before locking creates a directory
        raise CassetteError(f"no cassette at {cassette_dir} (no {CALLS_FILE})")
    with locked(Path(cassette_dir)):
        cassette = Cassette.open(Path(cassette_dir), create=False)
        _refuse_damage(cassette, drop_bad)
        return rewrite(cassette, lambda: ((cassette, entry) for entry in cassette.iter_entries()))


def prune(cassette: Cassette, keep_sample_keys: set[str], drop_bad: bool = False) -> int:
    """Drop every entry whose sample key is not in `keep_sample_keys`; the number removed.

    Which keys to keep is the caller's policy (results.keys_used reads them from runs); the store
    only knows sample keys."""
    with locked(cassette.directory):
        fresh = Cassette.open(cassette.directory, create=False)
        _refuse_damage(fresh, drop_bad)
        kept = {key for key in keep_sample_keys if fresh.lookup(key) is not None}
        removed = len(fresh) - len(kept)
        if removed:
            rewrite(fresh, lambda: ((fresh, entry) for entry in fresh.iter_entries(only=kept)))
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
        winners: dict[str, int] = dict.fromkeys(target.reader.sample_keys(), 0)
        added = replaced = 0
        for number, source in enumerate(sources, start=1):
            for key in source.reader.sample_keys():
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

        result = rewrite(target, merged)
    result.added, result.replaced = added, replaced
    result.dropped_bad = sum(len(c.problems) for c in [target, *sources])
    return result
