"""Fixtures for semantic search: the real model, loaded once per module."""

from __future__ import annotations

import os

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
    index.model()
    return index
