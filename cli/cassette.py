"""`tauproxy cassette ...`: list, show, count, check and tidy recorded model calls.

Only typer and rich load at import time; the store (pydantic, filelock) loads when a command runs,
so `tauproxy --help` stays fast. Errors tauproxy raises on purpose print one red line and exit 2.
"""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from tauproxy_cli.flag import flag
from tauproxy_cli.lazy_commands import LazyCommand, lazy_group
from tauproxy_cli.output import WholeTable, output_console

if TYPE_CHECKING:
    from tauproxy.store.cassette import Cassette
    from tauproxy.store.entry import CassetteEntry

# The shipped cassettes' commands and `import` live in their own modules, loaded when used.
SUBCOMMANDS = {
    "replay-check": LazyCommand(
        "tauproxy_cli.shipped:replay_check_command",
        "Replay every run of each manifest strictly offline; fail unless all calls replay and scores match.",
    ),
    "rerecord": LazyCommand(
        "tauproxy_cli.shipped:rerecord_command",
        "Record every manifest run again (record mode) into a fresh cassette, then swap it in.",
    ),
    "import": LazyCommand(
        "tauproxy_cli.cassette_import:import_command",
        "Import recorded model calls from vcrpy cassettes, keyed as `tauproxy serve` keys a live call.",
    ),
}

app = typer.Typer(
    cls=lazy_group(SUBCOMMANDS),
    help="Inspect and maintain cassettes: directories of recorded model calls (calls.jsonl).",
    no_args_is_help=True,
)

# soft_wrap: a listing line or an error stays one line however narrow the terminal.
_out = output_console(stderr=False, soft_wrap=True)
_err = output_console(stderr=True, soft_wrap=True)

JSON_HELP = "Print machine-readable JSON instead of text."
DROP_BAD_HELP = "Drop damaged lines instead of refusing to rewrite."

RUNS_HELP = (
    "Run whose calls to keep (run dir, results.json, or a τ²-bench file with its serve run log beside it "
    "as NAME.runlog.jsonl); more may follow."
)

DirArg = Annotated[Path, typer.Argument(help="Cassette directory.")]
JsonOpt = Annotated[bool, flag("--json", help=JSON_HELP)]
DropBadOpt = Annotated[bool, flag("--drop-bad", help=DROP_BAD_HELP)]


@contextmanager
def _errors() -> Iterator[None]:
    from tauproxy.errors import TauproxyError

    try:
        yield
    except TauproxyError as exc:
        _err.print(Text(f"error: {exc}", style="red"))
        raise typer.Exit(2) from None


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _open(directory: Path) -> "Cassette":
    from tauproxy.store.cassette import Cassette

    return Cassette.open(directory, create=False)


def _cost(value: float | None) -> str:
    return "-" if value is None else f"${value:.6f}".rstrip("0").rstrip(".")


def _row(index: int, entry: "CassetteEntry") -> dict[str, Any]:
    return {
        "index": index,
        "task_id": entry.task_id,
        "trial": entry.trial,
        "role": entry.role,
        "call_index": entry.call_index,
        "model": entry.request.model,
        "key": entry.key,
        "sample_key": entry.sample_key,
        "cost_usd": entry.cost_usd,
    }


@app.command("ls")
def ls(
    directory: DirArg,
    as_json: JsonOpt = False,
) -> None:
    """One line per recorded call: index, task/trial, role, call index, model, key, cost."""
    with _errors():
        rows = [_row(i, entry) for i, entry in enumerate(_open(directory).iter_entries())]
    if as_json:
        _print_json(rows)
        return
    scopes = [f"{row['task_id']}/{row['trial']}" for row in rows]
    # Columns as wide as their longest value (τ²'s task ids and model names with options run long).
    wide = max([len("task/trial"), *map(len, scopes)])
    model_wide = max([len("model"), *(len(str(row["model"])) for row in rows)])
    _out.print(
        f"{'#':>5}  {'task/trial':<{wide}} {'role':<5} {'call':<5} {'model':<{model_wide}} {'key':<12}  cost",
        markup=False,
    )
    for row, scope in zip(rows, scopes, strict=True):
        _out.print(
            f"{row['index']:>5}  {scope:<{wide}} {row['role']:<5} #{row['call_index']:<4} "
            f"{row['model']!s:<{model_wide}} {row['key'][:12]}  {_cost(row['cost_usd'])}",
            markup=False,
        )


def _find(cassette: "Cassette", ref: str) -> "CassetteEntry":
    from tauproxy.errors import CassetteError

    ref = ref.strip().lower()
    if not ref or not all(c in "0123456789abcdef" for c in ref):
        raise CassetteError(f"{ref!r} is not a sample key or key prefix (hex digits, as `cassette ls` shows them)")
    exact = cassette.lookup(ref) if len(ref) == 64 else None  # a full sample key: found through the index
    if exact is not None:
        return exact
    matches = [e for e in cassette.iter_entries() if e.sample_key.startswith(ref) or e.key.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise CassetteError(f"no call in {cassette.directory} has a sample key or key starting with {ref!r}")
    shown = ", ".join(e.sample_key[:16] for e in matches[:5])
    raise CassetteError(f"{len(matches)} calls match {ref!r} (sample keys {shown}, ...); give a longer prefix")


def _print_message(index: int | str, message: dict[str, Any]) -> None:
    # A Responses API input item may have no role: its type says what it is (function_call_output, ...).
    _out.print(Text(f"[{index}] {message.get('role') or message.get('type')}", style="bold"))
    content = message.get("content", message.get("output"))
    if content:
        _out.print(content if isinstance(content, str) else json.dumps(content), markup=False)
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        line = f"→ {function.get('name')}({function.get('arguments')})  id={call.get('id')}"
        _out.print(Text(line, style="cyan"))
    if message.get("tool_call_id"):
        _out.print(Text(f"(result of {message['tool_call_id']})", style="dim"))


def _print_entry(entry: "CassetteEntry", request: dict[str, Any], response: dict[str, Any]) -> None:
    usage = entry.usage
    seed = "-" if entry.seed is None else entry.seed
    _out.print(
        f"sample {entry.sample_key}\nkey    {entry.key}\n"
        f"task {entry.task_id}  trial {entry.trial}  occurrence {entry.occurrence}  seed {seed}  "
        f"role {entry.role}  call #{entry.call_index}\n"
        f"recorded {entry.recorded_at}  latency {entry.latency_s:.2f} s  cost {_cost(entry.cost_usd)}"
        f" ({entry.price_source or 'no price source'})\n"
        f"tokens: {usage.prompt_tokens} prompt ({usage.cached_tokens} cached), "
        f"{usage.completion_tokens} completion ({usage.reasoning_tokens} reasoning)",
        markup=False,
    )
    structural = {"model", "messages", "tools", "tool_choice"}
    params = ", ".join(f"{k}={json.dumps(v)}" for k, v in request.items() if k not in structural)
    _out.rule(Text(f"request: {request.get('model')}  {params}".strip()))
    tools = [str((t.get("function") or t).get("name")) for t in request.get("tools") or []]  # chat or Responses shape
    if tools:
        _out.print(Text(f"tools: {', '.join(tools)}  tool_choice: {request.get('tool_choice')}", style="dim"))
    for index, message in enumerate(request["messages"]):
        _print_message(index, message)
    choice = response["choices"][0]
    _out.rule(Text(f"response: {response.get('model')}  finish_reason={choice.get('finish_reason')}"))
    _print_message("reply", choice["message"])


@app.command("show")
def show(
    directory: DirArg,
    ref: Annotated[str, typer.Argument(metavar="SAMPLE_KEY_OR_KEY_PREFIX", help="A sample key or a key prefix.")],
    as_json: JsonOpt = False,
) -> None:
    """The full recorded request and response of one call."""
    with _errors():
        cassette = _open(directory)
        entry = _find(cassette, ref)
        request, response = cassette.request_of(entry), cassette.response_of(entry)
    if as_json:
        _print_json({"entry": entry.model_dump(mode="json"), "request": request, "response": response})
        return
    _print_entry(entry, request, response)


@app.command("stats")
def stats(
    directory: DirArg,
    as_json: JsonOpt = False,
) -> None:
    """Calls per role and model, tokens, recorded cost, size."""
    from tauproxy.store.maintenance import stats as cassette_stats

    with _errors():
        data = cassette_stats(_open(directory))
    if as_json:
        _print_json(data)
        return
    table = WholeTable(show_header=False, box=None)
    for name, value in data.items():
        shown = ", ".join(f"{k} {v}" for k, v in value.items()) if isinstance(value, dict) else str(value)
        table.add_row(name, Text(shown))
    _out.print(table)


@app.command("verify")
def verify(
    directory: DirArg,
    as_json: JsonOpt = False,
) -> None:
    """Check every line, hash and reference; exit 1 when there are problems."""
    from tauproxy.store.maintenance import check

    with _errors():
        cassette = _open(directory)
        report = check(cassette)
    if as_json:
        _print_json({"problems": report.problems, "warnings": report.warnings})
    else:
        for warning in report.warnings:
            _out.print(Text(f"warning: {warning}", style="yellow"))
        for problem in report.problems:
            _out.print(problem, markup=False)
        if not report.problems:
            _out.print(
                Text(f"ok: {len(cassette)} calls, {cassette.inspector.messages_stored()} messages", style="green")
            )
    if report.problems:
        raise typer.Exit(1)


def _print_rewrite(result: Any, as_json: bool, verb: str) -> None:
    from dataclasses import asdict

    if as_json:
        _print_json(asdict(result))
        return
    _out.print(
        f"{verb}: {result.entries} calls, {result.lines_before} -> {result.lines_after} lines"
        + (f", {result.dropped_bad} damaged line(s) dropped" if result.dropped_bad else ""),
        markup=False,
    )


@app.command("merge")
def merge(
    target: Annotated[Path, typer.Argument(help="Cassette to merge into (created if absent).")],
    sources: Annotated[list[Path], typer.Argument(help="Cassettes to merge from.")],
    drop_bad: DropBadOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Union of cassettes into TARGET; for a sample key in several, the last source wins."""
    from tauproxy.store.maintenance import merge as merge_cassettes

    with _errors():
        result = merge_cassettes(target, sources, drop_bad=drop_bad)
    _print_rewrite(result, as_json, f"merged ({result.added} new, {result.replaced} replaced)")


@app.command("prune")
def prune(
    directory: DirArg,
    more_runs: Annotated[list[Path] | None, typer.Argument(hidden=True)] = None,
    runs: Annotated[list[Path] | None, typer.Option("--runs", help=RUNS_HELP)] = None,
    drop_bad: DropBadOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Keep only the calls used by the given runs: `prune DIR --runs RUN_DIR [RUN_DIR...]`."""
    from tauproxy.errors import ConfigError
    from tauproxy.results.keys_used import sample_keys_used
    from tauproxy.store.maintenance import prune as prune_cassette

    with _errors():
        run_dirs = [*(runs or []), *(more_runs or [])]
        if not run_dirs:
            raise ConfigError("give at least one --runs RUN_DIR whose calls to keep")
        keep = sample_keys_used(run_dirs)
        if not keep:
            raise ConfigError("the given runs used no recorded calls; refusing to prune every call")
        cassette = _open(directory)
        before = len(cassette)
        removed = prune_cassette(cassette, keep, drop_bad=drop_bad)
    if as_json:
        _print_json({"before": before, "removed": removed, "kept": len(cassette)})
        return
    _out.print(f"pruned {removed} of {before} calls; {len(cassette)} kept", markup=False)


@app.command("compact")
def compact(
    directory: DirArg,
    drop_bad: DropBadOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Rewrite without duplicates, superseded calls or unused messages, in the current format (atomic).

    Old cassettes (64-hex references) stay readable as they are; compact upgrades them to short
    references, which keeps every lookup identical and makes the file smaller in git."""
    from tauproxy.store.maintenance import compact as compact_cassette

    with _errors():
        result = compact_cassette(directory, drop_bad=drop_bad)
    _print_rewrite(result, as_json, "compacted")
