"""A fixture for test modules that import τ²'s own orchestrator in-process.

Importing `tau2.utils.llm_utils` (τ²'s agent, user simulator and `tau2.run` do) sets litellm
globals for the whole process; this puts them back for the tests that run after the module.
Use it as `pytestmark = [pytest.mark.usefixtures("litellm_as_it_was"), ...]` after importing it.
"""

from __future__ import annotations

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
