"""Typed Python functions become tools: `@tool` marks them, their signature and docstring become the
OpenAI function schema, and pydantic validates the arguments a model sends.

A tool's first parameter is the domain state (`db`); the model never sees it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from tauproxy.data_model.tool import FunctionSchema, ToolKind, ToolSchema
from tauproxy.errors import DomainError, ToolExecutionError

Side = Literal["assistant", "user"]
FunctionRole = Literal["tool", "assertion", "setup"]

_MARK = "__tauproxy_tool__"


@dataclass(frozen=True)
class ToolMark:
    role: FunctionRole
    kind: ToolKind = "read"
    side: Side = "assistant"


def tool(kind: ToolKind = "read", side: Side = "assistant") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as a tool a model may call. `kind="write"` tools change state."""

    def mark(func: Callable[..., Any]) -> Callable[..., Any]:
        setattr(func, _MARK, ToolMark(role="tool", kind=kind, side=side))
        return func

    return mark


def user_tool(kind: ToolKind = "write") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as a tool the user simulator holds (dual control)."""
    return tool(kind=kind, side="user")


def assertion(func: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a function that env_assertions may call to read state; models never see it."""
    setattr(func, _MARK, ToolMark(role="assertion"))
    return func


def setup(func: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a function that initialization_actions may call to prepare state; models never see it."""
    setattr(func, _MARK, ToolMark(role="setup", kind="write"))
    return func


class _ArgsBase(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class DomainFunction:
    """A marked function with its schema and argument validator, ready to call on a state."""

    name: str
    func: Callable[..., Any]
    mark: ToolMark
    description: str
    args_model: type[BaseModel]
    schema: ToolSchema = field(compare=False)

    @property
    def is_write(self) -> bool:
        return self.mark.kind == "write"

    def call(self, db: Any, arguments: dict[str, Any]) -> Any:
        try:
            parsed = self.args_model.model_validate(arguments)
        except ValidationError as exc:
            raise ToolExecutionError(_describe_validation_error(self.name, exc)) from None
        values = {name: getattr(parsed, name) for name in self.args_model.model_fields}
        return self.func(db, **values)


def marked_functions(namespace: dict[str, Any], origin: str) -> list[DomainFunction]:
    """Every marked function of a module namespace, in definition order."""
    functions = []
    for value in namespace.values():
        mark = getattr(value, _MARK, None)
        if isinstance(mark, ToolMark) and callable(value):
            functions.append(build_function(value, mark, origin))
    return functions


def build_function(func: Callable[..., Any], mark: ToolMark, origin: str) -> DomainFunction:
    name = func.__name__
    summary, arg_docs = parse_docstring(inspect.getdoc(func) or "")
    if mark.role == "tool" and not summary:
        raise DomainError(f"{origin}: tool {name!r} has no docstring; models need its description")
    args_model = _args_model(func, arg_docs, origin)
    parameters = _clean_schema(args_model.model_json_schema())
    schema = ToolSchema(function=FunctionSchema(name=name, description=summary, parameters=parameters))
    return DomainFunction(name, func, mark, summary, args_model, schema)


def _args_model(func: Callable[..., Any], arg_docs: dict[str, str], origin: str) -> type[BaseModel]:
    signature = inspect.signature(func)
    params = list(signature.parameters.values())
    if not params:
        raise DomainError(f"{origin}: {func.__name__!r} must take the domain state as its first parameter")
    try:
        hints = get_type_hints(func, include_extras=True)
    except Exception as exc:
        raise DomainError(f"{origin}: cannot read the type hints of {func.__name__!r}: {exc}") from None
    fields: dict[str, Any] = {}
    for param in params[1:]:
        if param.name not in hints:
            raise DomainError(f"{origin}: parameter {param.name!r} of {func.__name__!r} has no type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], Field(default, description=arg_docs.get(param.name)))
    return create_model(f"{func.__name__}_args", __base__=_ArgsBase, **fields)


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated titles; models do not need them and they bloat every request."""
    if isinstance(schema, dict):
        return {
            key: _clean_schema(value)
            for key, value in schema.items()
            if not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [_clean_schema(item) for item in schema]
    return schema


_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Google-style docstring -> (description, {arg: description})."""
    lines = doc.splitlines()
    summary_lines: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section, current = "args", None
            continue
        if stripped in ("Returns:", "Raises:", "Example:", "Examples:"):
            section = "other"
            continue
        if section == "summary":
            summary_lines.append(stripped)
        elif section == "args":
            match = _ARG_LINE.match(line)
            if match:
                current = match.group(1)
                args[current] = match.group(2).strip()
            elif current and stripped:
                args[current] = f"{args[current]} {stripped}".strip()
    summary = " ".join(part for part in summary_lines if part).strip()
    return summary, args


def _describe_validation_error(name: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return f"invalid arguments for {name}: " + "; ".join(problems)
