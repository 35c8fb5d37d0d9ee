"""A shipped cassette's manifest: which runs recorded it, with which models and settings, and what they
scored. CI replays every manifest run strictly; `cassette rerecord` records them again after a deliberate
change to requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from tauproxy.errors import CassetteError
from tauproxy.validation import first_problem

MANIFEST_FILE = "manifest.json"


class ManifestRun(BaseModel):
    name: str
    # `tauproxy run` flags by their option names (domain, agent_llm, num_trials, ...), without the
    # cassette, record mode and save-to, which the replay or re-record supplies.
    flags: dict[str, Any]
    expected_pass_hat_k: dict[int, float] = Field(default_factory=dict)
    calls: int = 0


class CassetteManifest(BaseModel):
    name: str
    description: str
    recorded_on: str
    tauproxy_version: str
    models: dict[str, str]
    settings: dict[str, Any] = Field(default_factory=dict)
    notes: str = ""
    runs: list[ManifestRun]


def manifest_path(cassette: Path) -> Path:
    return cassette / MANIFEST_FILE


def load_manifest(cassette: Path) -> CassetteManifest:
    path = manifest_path(cassette)
    try:
        return CassetteManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        raise CassetteError(f"{path}: no manifest; only shipped cassettes carry one") from None
    except OSError as exc:
        raise CassetteError(f"{path}: cannot read the manifest: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CassetteError(f"{path}: not a manifest: not UTF-8 text (byte {exc.start})") from None
    except ValidationError as exc:
        field, message = first_problem(exc)
        raise CassetteError(f"{path}: field {field}: {message}") from None


def write_manifest(cassette: Path, manifest: CassetteManifest) -> None:
    manifest_path(cassette).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")


def shipped_cassettes(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob(f"*/{MANIFEST_FILE}"))
