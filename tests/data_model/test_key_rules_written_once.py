"""Two rules of the key are written once, in tauproxy/data_model/key.py, and only used elsewhere:

- which request fields are connection settings (EXCLUDED_PARAMS: never keyed, never on disk), and
  the one filter that drops them (`without_connection_settings`);
- how a request that names no trial is identified (`identify_unscoped`: in SERVE_SCOPE, without an
  occurrence counter), for `tauproxy serve` without a scope header and for τ²-bench's own calls
  through the bridge, which must identify requests exactly as serve does.

A second copy could drift from the first without any behaviour test noticing until a cassette stops
replaying, so the sources are read (with `ast`, nothing executed) for one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tauproxy.data_model.key import EXCLUDED_PARAMS

ROOT = Path(__file__).resolve().parents[2]
KEY_MODULE = Path("tauproxy/data_model/key.py")
# Another rule over some of the same names: which llm args are secrets, masked in whatever is written
# (results files written before connection settings were dropped, error messages). Not the key's rule.
OTHER_RULES = {(Path("tauproxy/redact.py"), "SECRET_ARG_NAMES")}


def _sources() -> list[Path]:
    return sorted(path.relative_to(ROOT) for folder in ("tauproxy", "cli") for path in (ROOT / folder).rglob("*.py"))


def _names_in(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _other_rule_nodes(tree: ast.AST, path: Path) -> set[int]:
    """ids of every node inside an assignment that OTHER_RULES names."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and (path, t.id) in OTHER_RULES for t in targets):
                inside.update(id(n) for n in ast.walk(node))
    return inside


def _name_of(node: ast.AST) -> str | None:
    """The name a Name or an attribute access (`key.EXCLUDED_PARAMS`, `key.TrialScope`) says."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def connection_name_sets(source: str, path: Path) -> list[str]:
    """Set literals (and set()/frozenset() of a literal) naming two or more connection settings."""
    tree = ast.parse(source)
    skip = _other_rule_nodes(tree, path)
    found = []
    for node in ast.walk(tree):
        is_set = isinstance(node, ast.Set)
        is_set_call = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("set", "frozenset")
            and bool(node.args)
            and isinstance(node.args[0], (ast.List, ast.Tuple))
        )
        if (is_set or is_set_call) and id(node) not in skip:
            named = sorted(_names_in(node) & EXCLUDED_PARAMS)
            if len(named) >= 2:
                found.append(f"{path}:{node.lineno}: {', '.join(named)}")
    return found


def connection_filters(source: str, path: Path) -> list[str]:
    """`... not in EXCLUDED_PARAMS`: the filter written out again instead of calling the one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.NotIn) for op in node.ops):
            names = {_name_of(n) for c in node.comparators for n in ast.walk(c)}
            if "EXCLUDED_PARAMS" in names:
                found.append(f"{path}:{node.lineno}")
    return found


def constant_scopes(source: str, path: Path) -> list[str]:
    """A TrialScope built from a constant task id: a fixed scope, which only SERVE_SCOPE is."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _name_of(node.func) == "TrialScope":
            values = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "task_id")]
            if any(isinstance(v, ast.Constant) for v in values):
                found.append(f"{path}:{node.lineno}")
    return found


def serve_scope_uses(source: str, path: Path) -> list[str]:
    """SERVE_SCOPE named outside key.py: the no-trial policy applied by hand, not by `identify_unscoped`."""
    return [f"{path}:{n.lineno}" for n in ast.walk(ast.parse(source)) if _name_of(n) == "SERVE_SCOPE"]


@pytest.mark.parametrize("check", [connection_name_sets, connection_filters, constant_scopes, serve_scope_uses])
def test_written_only_in_key_py(check: object) -> None:
    assert callable(check)
    found = [hit for path in _sources() if path != KEY_MODULE for hit in check((ROOT / path).read_text("utf-8"), path)]
    assert not found, "use tauproxy/data_model/key.py's definition instead:\n" + "\n".join(found)


def test_key_py_holds_each_definition() -> None:
    source = (ROOT / KEY_MODULE).read_text("utf-8")
    assert len(connection_name_sets(source, KEY_MODULE)) == 1
    assert len(constant_scopes(source, KEY_MODULE)) == 1


@pytest.mark.parametrize(
    ("check", "copy"),
    [
        (connection_name_sets, 'NOT_SENT = frozenset({"api_base", "timeout"})\n'),
        (connection_name_sets, 'NOT_SENT = frozenset(["api_key", "num_retries"])\n'),
        (connection_filters, "wire = {k: v for k, v in body.items() if k not in EXCLUDED_PARAMS}\n"),
        (connection_filters, "wire = {k: v for k, v in body.items() if k not in key.EXCLUDED_PARAMS}\n"),
        (constant_scopes, 'SCOPE = TrialScope(task_id="serve", trial=0)\n'),
        (constant_scopes, 'SCOPE = key.TrialScope("serve", 0)\n'),
        (serve_scope_uses, "identity, _ = identify(wire, SERVE_SCOPE, None)\n"),
        (serve_scope_uses, "client.complete_wire(wire, role, key.SERVE_SCOPE, connection)\n"),
    ],
)
def test_the_checks_see_a_second_copy(check: object, copy: str) -> None:
    assert callable(check)
    assert check(copy, Path("tauproxy/elsewhere.py"))


def test_the_checks_let_uses_through() -> None:
    uses = (
        "wire = without_connection_settings(body)\n"
        "leaked = [name for name in wire if name in EXCLUDED_PARAMS]\n"
        "scope = TrialScope(task_id=task.id, trial=trial)\n"
        'ROAMING = frozenset({"roaming_backend_off", "roaming_phone_off"})\n'
    )
    path = Path("tauproxy/elsewhere.py")
    assert not connection_name_sets(uses, path) + connection_filters(uses, path) + constant_scopes(uses, path)
