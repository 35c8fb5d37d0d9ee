"""Model options as typed schemas: what a model name's `?key=value` part and a role's llm args may hold.

Each model family (proxy/families.py) registers two pydantic models: the options its names take after
`?` (`scripted/oracle?error_rate=0.3`), and the llm args its requests may carry (`--agent-llm-args`).
Both refuse an unknown key, a value of the wrong type and a value out of range, with one line that
names the options the family does take, so a typo is an error before the first trial instead of a
run that silently ignores it.

The llm args are only checked here, never rewritten: the request carries them exactly as given, so
every key (and every cassette recorded with them) stays what it was.
"""

from __future__ import annotations

from typing import Any, TypeVar
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from tauproxy.errors import ConfigError


class ModelOptionsError(ConfigError):
    """A model option that is unknown, of the wrong type or out of range. `in_args` says where it was
    given: the llm args (True) or the model name after `?` (False), so the CLI can name the flag."""

    def __init__(self, message: str, *, in_args: bool) -> None:
        super().__init__(message)
        self.in_args = in_args


class ModelOptions(BaseModel):
    """The options a model name takes after `?`, each a field with its type, default and bounds.

    Values arrive as text from the name, so they are parsed (lax mode): `error_rate=0.3` is a number,
    `violate=1` or `violate=true` a flag; anything else is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoOptions(ModelOptions):
    """For a model whose name takes no options."""


class SamplingArgs(BaseModel):
    """The sampling args every family accepts in its llm args (a family's schema extends this one).

    Strict: the llm args are JSON, so a number given as text ("0.5") is refused rather than coerced,
    because the request would carry the text. Connection settings (api_base, timeout, ...) are not
    checked here: they never reach a request and have their own model, ConnectionSettings."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    temperature: float | None = Field(None, ge=0, allow_inf_nan=False)
    top_p: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    presence_penalty: float | None = Field(None, ge=-2, le=2, allow_inf_nan=False)
    frequency_penalty: float | None = Field(None, ge=-2, le=2, allow_inf_nan=False)


Options = TypeVar("Options", bound=ModelOptions)


def parse_name_options(model: str, query: str, schema: type[Options]) -> Options:
    """The options after `?` in `model`, checked against `schema`; one line naming the valid ones if not."""
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise _name_error(model, f"cannot read the options {query!r} (write key=value&key=value)", schema) from None
    given: dict[str, str] = {}
    for key, value in pairs:
        if key in given:
            raise _name_error(model, f"option {key} is given twice", schema)
        given[key] = value
    try:
        return schema.model_validate(given)
    except ValidationError as exc:
        raise _name_error(model, _problem(exc.errors()[0], "option"), schema) from None


def check_llm_args(model: str, args: dict[str, Any], schema: type[BaseModel]) -> None:
    """Refuse llm args (connection settings already taken out) that `schema` does not take."""
    try:
        schema.model_validate(args)
    except ValidationError as exc:
        problem = _problem(exc.errors()[0], "llm arg")
        raise ModelOptionsError(
            f"{problem}; the llm args of {model} take {describe(schema)}, and connection settings", in_args=True
        ) from None


def describe(schema: type[BaseModel]) -> str:
    """The fields of `schema` as one line: `error_rate (number 0 to 1, default 0), violate (true or false)`."""
    properties: dict[str, Any] = schema.model_json_schema().get("properties", {})
    if not properties:
        return "no options"
    return ", ".join(f"{name} ({_kind(prop)})" for name, prop in properties.items())


def _name_error(model: str, problem: str, schema: type[ModelOptions]) -> ModelOptionsError:
    base = model.split("?", 1)[0]
    return ModelOptionsError(f"{model}: {problem}; {base} takes {describe(schema)}", in_args=False)


def _problem(error: ErrorDetails, what: str) -> str:
    name = ".".join(str(part) for part in error["loc"]) or "?"
    if error["type"] == "extra_forbidden":
        return f"unknown {what} {name!r}"
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return f"{what} {name}: {error['msg']}"
    shown = _shown(error.get("input"))
    return f"{what} {name}={shown}: {error['msg'].lower()}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_KINDS = {"number": "number", "integer": "whole number", "boolean": "true or false", "string": "text", "array": "list"}


def _kind(prop: dict[str, Any]) -> str:
    kinds = [p.get("type") for p in prop.get("anyOf", [prop])]
    parts = [" or ".join(dict.fromkeys(_KINDS.get(str(k), str(k)) for k in kinds if k != "null")) or "any"]
    variants = prop.get("anyOf", [prop])
    low = next((v["minimum"] for v in variants if "minimum" in v), None)
    high = next((v["maximum"] for v in variants if "maximum" in v), None)
    if low is not None and high is not None:
        parts.append(f"{_number(low)} to {_number(high)}")
    elif low is not None:
        parts.append(f"at least {_number(low)}")
    elif high is not None:
        parts.append(f"at most {_number(high)}")
    default = prop.get("default")
    if default not in (None, False):
        parts.append(f"default {_number(default)}")
    return ", ".join(parts)


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
