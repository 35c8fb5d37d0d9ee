"""Read a small YAML or JSON settings file (prices, upstream maps) with errors that name the file.

Every failure is one line, the file first; a syntax error points at the spot the way compilers do:
"prices.yaml:3:7: not valid YAML (mapping values are not allowed here)".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tauproxy.errors import ConfigError

YAML_SUFFIXES = (".yaml", ".yml")


def read_mapping_file(path: Path, what: str) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: {what} is not UTF-8 text (byte {exc.start + 1})") from None
    is_yaml = path.suffix in YAML_SUFFIXES
    try:
        raw = _load_yaml(path, text) if is_yaml else _load_json(path, text)
    except RecursionError:
        raise ConfigError(f"{path}: not valid {'YAML' if is_yaml else 'JSON'} (nested too deeply)") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {what} must be an object (a mapping)")
    return raw


def _load_json(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None


def _load_yaml(path: Path, text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        reason = exc.problem or exc.context or "syntax error"
        if exc.context and reason.startswith("but "):  # "expected a single document ..., but found another"
            reason = f"{exc.context}, {reason}"
        raise ConfigError(f"{where}: not valid YAML ({_one_line(reason)})") from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow; it has a position, not a mark
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        char = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "?")
        raise ConfigError(f"{path}:{line}:{column}: not valid YAML (unacceptable character #x{char:04x})") from None
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{path}: not valid YAML ({_one_line(first)})") from None


def _one_line(text: str) -> str:
    return " ".join(text.split())
