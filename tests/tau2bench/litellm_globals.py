"""A fixture for test modules that import τ²'s own orchestrator in-process.

Importing `tau2.utils.llm_utils` (τ²'s agent, user simulator and `tau2.run` do) sets litellm
globals for the whole process; this puts them back for the tests that run after the module.
Use it as `pytestmark = [pytest.mark.usefixtures("litellm_as_it_was"), ...]` after importing it;
`tau2_in_process` also imports τ² up front, once, so that `invoke_cli` may run `tau2/` domains.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator

import pytest

LITELLM_GLOBALS = ("drop_params", "suppress_debug_info", "success_callback", "failure_callback", "cache")


@pytest.fixture(scope="module")
def litellm_as_it_was() -> Iterator[None]:
    import litellm

    saved = {name: getattr(litellm, name) for name in LITELLM_GLOBALS}
    yield
    for name, value in saved.items():
        setattr(litellm, name, value)


@pytest.fixture(scope="module")
def tau2_in_process(litellm_as_it_was: None) -> Iterator[None]:
    """τ²'s litellm setter imported in this process (lazily: collecting the module stays cheap), its
    globals put back after the module by `litellm_as_it_was`; τ²'s logging muted as `tau2 run` has it."""
    import loguru
    from conftest import TAU2_LITELLM_SETTER

    if TAU2_LITELLM_SETTER in sys.modules:
        # Imported by an earlier module of this process, whose `litellm_as_it_was` has since put the
        # globals back: run its top level again, so this module sees them as τ²'s import sets them
        # (without it, litellm prints its provider list into a command's JSON output).
        importlib.reload(sys.modules[TAU2_LITELLM_SETTER])
    else:
        importlib.import_module(TAU2_LITELLM_SETTER)
    loguru.logger.disable("tau2")
    yield
    loguru.logger.enable("tau2")
