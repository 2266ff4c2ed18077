"""Where the real test vaults live: ../shared/corpora next to the repository, read in place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def require_corpora() -> Path:
    """The corpora folder; skips the test when it is absent, except on CI where that fails."""
    if CORPORA.is_dir():
        return CORPORA
    reason = f"test corpora not found at {CORPORA} (see shared/corpora/README.md)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)
