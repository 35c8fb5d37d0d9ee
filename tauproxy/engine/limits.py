"""How long one trial may go on before the orchestrator stops it.

Its own module, importing nothing, so the CLI can show these defaults in `--help` without importing
the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_STEPS = 200
DEFAULT_MAX_ERRORS = 10


@dataclass(frozen=True)
class Limits:
    max_steps: int = DEFAULT_MAX_STEPS
    max_errors: int = DEFAULT_MAX_ERRORS
