"""typer's help renderer without the two rich modules it imports for features turned off here.

typer (0.29) writes `--help` with `typer.rich_utils`, which imports rich's Markdown (markdown-it) and
Traceback (pygments) at its top: about half of what `tauproxy --help` imports. It makes a Markdown only
in "markdown" markup mode (ours is "rich") and a Traceback only for pretty exceptions (turned off in
main.py). `import_help_renderer` imports it with stand-ins for those two classes that load the real one
when first used, so nothing changes if either ever is. Other importers of those modules get the real
ones: the stand-ins only sit in sys.modules while typer's module is imported.

tests/cli/test_lazy_commands.py checks that `tauproxy --help` leaves markdown-it and pygments unloaded.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

# module: the class typer.rich_utils takes from it
DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}


class _LoadsOnUse(type):
    """A stand-in class: making one, or any attribute (Traceback.from_exception), loads the real class."""

    _module: str

    def real(cls) -> Any:
        return getattr(importlib.import_module(cls._module), cls.__name__)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.real()(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls.real(), name)


def import_help_renderer() -> None:
    if "typer.rich_utils" in sys.modules:
        return
    stand_ins = [module for module in DEFERRED if module not in sys.modules]
    for module in stand_ins:
        placeholder = types.ModuleType(module)
        setattr(placeholder, DEFERRED[module], _LoadsOnUse(DEFERRED[module], (), {"_module": module}))
        sys.modules[module] = placeholder
    try:
        importlib.import_module("typer.rich_utils")
    except ImportError:
        pass  # typer without rich: it writes plain help and never imports either
    finally:
        for module in stand_ins:
            del sys.modules[module]
