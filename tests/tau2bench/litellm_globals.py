"""A fixture for test modules that import τ²'s own orchestrator in-process.

Importing `tau2.utils.llm_utils` (τ²'s agent, user simulator and `tau2.run` do) sets litellm
globals for the whole process; this puts them back for the tests that run after the module.
Use it as `pytestmark = [pytest.mark.usefixtures("litellm_as_it_was"), ...]` after importing it;
`tau2_in_process` also imports τ² up front, once, so that `invoke_cli` may run `tau2/` domains.
"""

from __future__ import annotations

import importlib
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

    importlib.import_module(TAU2_LITELLM_SETTER)
    loguru.logger.disable("tau2")
    yield
    loguru.logger.enable("tau2")
