"""tauproxy: evaluate tool-using agents the tau2-bench way, and never pay twice for a model call.

The Python API (tauproxy/api.py) is re-exported here, so `import tauproxy as tp; tp.run(...)` works in
a notebook. It loads on first use of one of its names: importing this package stays cheap (no run
machinery, and litellm, about 5 s to import, only when a live call is made).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tauproxy.version import __version__

if TYPE_CHECKING:
    from tauproxy.api import (
        AgentPrompt,
        ConnectionSettings,
        Intercept,
        LLMConfig,
        Message,
        ModelRequest,
        RecordMode,
        ReportSummary,
        RunConfig,
        RunReport,
        RunStop,
        ScoreComparison,
        SideBySide,
        TrialRow,
        check,
        compare,
        intercept,
        load_run,
        run,
        run_config,
        to_dataframe,
        trial_rows,
        write_csv,
    )

# "__version__" and tauproxy.api's public names (a test keeps them equal to tauproxy.api.__all__).
__all__ = [
    "AgentPrompt",
    "ConnectionSettings",
    "Intercept",
    "LLMConfig",
    "Message",
    "ModelRequest",
    "RecordMode",
    "ReportSummary",
    "RunConfig",
    "RunReport",
    "RunStop",
    "ScoreComparison",
    "SideBySide",
    "TrialRow",
    "__version__",
    "check",
    "compare",
    "intercept",
    "load_run",
    "run",
    "run_config",
    "to_dataframe",
    "trial_rows",
    "write_csv",
]
API_NAMES: tuple[str, ...] = tuple(name for name in __all__ if name != "__version__")


def __getattr__(name: str) -> Any:
    if name in API_NAMES:
        return getattr(importlib.import_module("tauproxy.api"), name)
    raise AttributeError(f"module 'tauproxy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
