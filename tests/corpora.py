"""Where the real test vaults live: ../shared/corpora next to the repository, read in place."""

from __future__ import annotations

from pathlib import Path

from tests.absent import corpora_absent

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def require_corpora() -> Path:
    """The corpora folder; skips the test when it is absent, except on CI where that fails."""
    if not CORPORA.is_dir():
        corpora_absent(f"test corpora not found at {CORPORA} (see shared/corpora/README.md)")
    return CORPORA
