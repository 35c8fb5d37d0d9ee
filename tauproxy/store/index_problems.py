"""Why lines of a cassette cannot be used: references that are not stored, broken chains, cycles.

Read from the index alone (plus the call lines that do not resolve), for `Cassette.problems` and for
the builder, which needs to know whether a call resolves before it counts it.
"""

from __future__ import annotations

from tauproxy.store.entry import StoredRequest, StoredResponse
from tauproxy.store.format import CassetteProblem
from tauproxy.store.index_db import AMBIGUOUS, BLOB, MSG, NODE, Located
from tauproxy.store.index_query import IndexQuery


def missing_refs(query: IndexQuery, request: StoredRequest, response: StoredResponse, call: str) -> str | None:
    """Why a call cannot be replayed (a reference that is not stored, broken or ambiguous), or None."""
    chain = request.chain
    if chain is not None:
        node = query.find(NODE, chain)
        if node is None:
            return f"{call} refers to message chain node {chain[:12]}, which is not stored"
        if node == AMBIGUOUS:
            return f"{call} refers to message chain node {chain[:12]}, which names two different nodes"
        assert isinstance(node, Located)
        if node.depth is None:
            why = break_of(query, chain)
            return f"{call} refers to message chain node {chain[:12]}, which does not resolve ({why})"
    replied = [*(request.messages or []), response.message]
    checks: list[tuple[int, str | None, str]] = [(MSG, d, "message") for d in replied]
    checks += [(BLOB, request.tools, "tools blob"), (BLOB, response.raw, "response blob")]
    checks += [(BLOB, response.body, "response body blob")]
    for kind, digest, what in checks:
        if digest is None:
            continue
        found = query.find(kind, digest)
        if found is None:
            return f"{call} refers to {what} {digest[:12]}, which is not stored"
        if found == AMBIGUOUS:
            return f"{call} refers to {what} {digest[:12]}, which names two different contents"
    return None


def _unusable(query: IndexQuery, kind: int, ref: str) -> str | None:
    """What is wrong with a reference a node makes ("message X, which is not stored"), or None."""
    found = query.find(kind, ref)
    what = "message" if kind == MSG else "parent node"
    if found is None:
        return f"{what} {ref[:12]}, which is not stored"
    if found == AMBIGUOUS:
        return f"{what} {ref[:12]}, which names two different {'contents' if kind == MSG else 'nodes'}"
    return None


def break_of(query: IndexQuery, ref: str) -> str:
    """Why the chain ending at node `ref` does not resolve: the first break walking to its start."""
    seen: set[str] = set()
    current: str | None = ref
    while current is not None:
        node = query.find(NODE, current)
        if not isinstance(node, Located):
            return f"node {current[:12]} is {'ambiguous' if node == AMBIGUOUS else 'not stored'}"
        if node.full in seen:
            return f"node {current[:12]} is part of a cycle"
        seen.add(node.full)
        assert node.message is not None
        why = _unusable(query, MSG, node.message) or (node.parent and _unusable(query, NODE, node.parent))
        if why:
            return f"node {current[:12]} refers to {why}"
        current = node.parent
    return "unresolved"


def index_problems(query: IndexQuery) -> list[CassetteProblem]:
    """Every line that cannot be used, with why: bad lines, breaks in chains, unresolvable calls."""
    problems = [
        CassetteProblem(query.calls_file, line, reason)
        for line, reason in query.db.execute("SELECT line, reason FROM bad").fetchall()
    ]
    pending = query.db.execute(
        "SELECT line, full, parent, message FROM content INDEXED BY content_pending WHERE kind = 2 AND depth IS NULL"
    ).fetchall()
    for line, full_bytes, parent, message in pending:
        _full = full_bytes.hex()
        # Each break once, where it is; nodes after a break are not reported, the calls using them are.
        why = _unusable(query, MSG, message) or (parent and _unusable(query, NODE, parent))
        if why:
            reason = f"refers to {why}"
        elif parent is not None and _in_cycle(query, parent, _full):
            reason = "is part of a cycle"
        else:
            continue
        problems.append(CassetteProblem(query.calls_file, line, f"node {_full[:12]} {reason}"))
    for line, off, length in query.db.execute("SELECT line, off, len FROM calls WHERE ok = 0").fetchall():
        entry, call = query.unresolved_at(off, length)
        why = missing_refs(query, entry.request, entry.response, call)
        problems.append(CassetteProblem(query.calls_file, line, why or f"{call}: its request key cannot be derived"))
    return sorted(problems, key=lambda problem: problem.line)


def _in_cycle(query: IndexQuery, parent: str, start: str) -> bool:
    seen: set[str] = set()
    current: str | None = parent
    while current is not None:
        node = query.find(NODE, current)
        if not isinstance(node, Located) or node.depth is not None:
            return False
        if node.full == start or node.full in seen:
            return node.full == start
        seen.add(node.full)
        current = node.parent
    return False
