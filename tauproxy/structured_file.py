"""Read a small YAML or JSON settings file (prices, upstream maps) with errors that name the file."""

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
    is_yaml = path.suffix in YAML_SUFFIXES
    try:
        if is_yaml:
            import yaml

            raw = yaml.safe_load(text)
        else:
            raw = json.loads(text)
    except Exception as exc:
        raise ConfigError(f"{path}: not valid {'YAML' if is_yaml else 'JSON'}: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {what} must be an object (a mapping)")
    return raw
