"""Why strict replay missed a request: the nearest recorded call, found through the index, and how
the two requests differ, as a typed `ReplayMiss` (errors.py renders its message)."""

from __future__ import annotations

from typing import Any

from tauproxy.data_model.call import CallRole
from tauproxy.data_model.key import TrialScope, message_hash, request_key, sample_key, seed_of, wire_api_of
from tauproxy.errors import CallSummary, ReplayMiss
from tauproxy.store.cassette import Cassette
from tauproxy.store.diff import request_differences
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import chain_nodes, chain_refs, short_ref


def summary_of(entry: CassetteEntry) -> CallSummary:
    """A recorded call as the miss report names it (recorded without a trial scope: no trial named)."""
    scoped = TrialScope(task_id=entry.task_id, trial=entry.trial).names_a_trial
    return CallSummary(
        key=entry.key,
        sample_key=entry.sample_key,
        task_id=entry.task_id if scoped else None,
        trial=entry.trial if scoped else None,
        scoped=scoped,
        occurrence=entry.occurrence,
        seed=entry.seed,
        call_index=entry.call_index,
        role=entry.role,
        model=entry.request.model,
    )


def _common_prefix(cassette: Cassette, entry: CassetteEntry, hashes: list[str], depths: dict[str, int]) -> int:
    """How many leading messages the entry's request shares with the request whose messages are `hashes`.

    `depths` maps each node of that request's chain to its depth. A node names its whole prefix, so
    the first node of the entry's chain (walking back from its end) found there is the shared prefix.
    """
    if entry.request.messages is not None:  # a version-1 entry lists its messages
        count = 0
        for mine, theirs in zip(hashes, entry.request.messages, strict=False):
            if not mine.startswith(theirs):
                break
            count += 1
        return count
    node = entry.request.chain
    while node is not None and node not in depths:
        node = cassette.reader.node(node)[0]
    return 0 if node is None else depths[node]


def nearest_entry(
    cassette: Cassette,
    wire_request: dict[str, Any],
    task_id: str,
    trial: int,
    role: CallRole,
    call_index: int,
) -> CassetteEntry | None:
    """The recorded call this request most likely meant to match, judged by content.

    The same request recorded as another sample first (same key: another seed, scope or
    occurrence); else, among calls of the same wire API (chat, responses, ...) and role (of any
    role if there are none), the longest
    common message prefix, then the same model, the same task and trial, the same call index, and
    the closest message count. The call index only breaks ties: under `serve` it counts a whole
    server's calls, not a conversation's. None for an empty cassette.

    Only the few calls the index ranks first are read (reader.near): those on the request's own
    chain, of its task and trial, of its model; a miss costs the same in a cassette of any size.
    """
    same_key = cassette.by_key(request_key(wire_request))
    if same_key:
        return next((e for e in same_key if (e.task_id, e.trial) == (task_id, trial)), same_key[0])
    api = wire_api_of(wire_request)
    hashes = [message_hash(m) for m in wire_request.get("messages") or []]
    # The request's chain as a v2 cassette names it (full references) and as v3 does (short ones).
    depths = {node: index + 1 for index, (node, _, _) in enumerate(chain_nodes(hashes))}
    depths.update({node: index + 1 for index, (node, _, _) in enumerate(chain_refs([short_ref(h) for h in hashes]))})
    model = wire_request.get("model")
    for wanted_role in (role, None):
        near = cassette.reader.near(wanted_role, task_id, trial, model, list(depths))
        # A call of another wire API is never the one meant: its request has another shape.
        candidates = [e for e in near if wire_api_of(e.request.params) == api]
        if candidates:
            return max(
                candidates,
                key=lambda e: (
                    _common_prefix(cassette, e, hashes, depths),
                    int(e.request.model == model),
                    int((e.task_id, e.trial) == (task_id, trial)),
                    int(e.call_index == call_index),
                    -abs(cassette.message_count(e) - len(hashes)),
                ),
            )
    return None


def replay_miss(
    cassette: Cassette,
    wire_request: dict[str, Any],
    *,
    task_id: str,
    trial: int,
    role: CallRole,
    call_index: int,
    occurrence: int = 0,
    made_in: TrialScope | None = None,
) -> ReplayMiss:
    """The whole strict-replay miss: what was asked, what is nearest, and how they differ.

    `task_id` and `trial` are the scope the request was keyed in; `made_in` the trial it was made
    in when that scope names none (τ²-bench's own calls within a trial), so the report names it.
    """
    key = request_key(wire_request)
    seed = seed_of(wire_request)
    keyed = TrialScope(task_id=task_id, trial=trial)
    known = keyed if keyed.names_a_trial else made_in
    call = CallSummary(
        key=key,
        sample_key=sample_key(key, seed, task_id, trial, occurrence),
        task_id=known.task_id if known is not None else None,
        trial=known.trial if known is not None else None,
        scoped=keyed.names_a_trial,
        occurrence=occurrence,
        seed=seed,
        call_index=call_index,
        role=role,
        model=wire_request.get("model"),
    )
    nearest = nearest_entry(cassette, wire_request, task_id, trial, role, call_index)
    problems = cassette.problems
    first_damage = str(problems[0]) if problems else None
    if nearest is not None and nearest.key == key:
        recorded_as = tuple(summary_of(e) for e in cassette.by_key(key))
        return ReplayMiss(call, str(cassette.directory), summary_of(nearest), recorded_as=recorded_as)
    differences = request_differences(wire_request, cassette.request_of(nearest)) if nearest is not None else []
    return ReplayMiss(
        call,
        str(cassette.directory),
        summary_of(nearest) if nearest is not None else None,
        differences=tuple(differences),
        scope_has_calls=cassette.reader.has_calls_in(task_id, trial),
        damaged_lines=len(problems),
        first_damage=first_damage,
    )


def miss_message(
    cassette: Cassette,
    wire_request: dict[str, Any],
    *,
    task_id: str,
    trial: int,
    role: CallRole,
    call_index: int,
    occurrence: int = 0,
) -> str:
    """replay_miss(...) as the text a ReplayMissError shows."""
    miss = replay_miss(
        cassette, wire_request, task_id=task_id, trial=trial, role=role, call_index=call_index, occurrence=occurrence
    )
    return miss.render()
