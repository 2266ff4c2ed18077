"""What a test does when something it needs is not on this machine: it skips, saying why, except
under CI=true where the piece is expected, which makes the absence a failure.

Expected under CI=true: on Linux, Debian's chromium and PostgreSQL (`.ci/run` installs them);
the real vaults of ../shared/corpora, unless the CI says it has none (`WEAVER_CORPORA_OPTIONAL`:
GitHub's runners, where third-party notes cannot be copied). On macOS and Windows the Debian
pieces are never expected: their tests skip there, naming the platform. PostgreSQL skips there
even where a server happens to be installed (GitHub's macOS and Windows images have one), unless
WEAVER_PG_BIN names the server to start: the suite's server handling is written for Debian's."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import pytest


def on_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def linux_piece_absent(reason: str) -> NoReturn:
    """Debian's chromium or PostgreSQL is missing."""
    if not sys.platform.startswith("linux"):
        pytest.skip(f"{reason} (a Linux-only piece of the suite; this is {sys.platform})")
    if on_ci():
        pytest.fail(f"required under CI=true: {reason}")
    pytest.skip(reason)


def postgres_off_linux() -> None:
    """Skip off Linux unless WEAVER_PG_BIN says which PostgreSQL server to start."""
    if not sys.platform.startswith("linux") and not os.environ.get("WEAVER_PG_BIN"):
        pytest.skip(
            f"PostgreSQL: the suite starts Debian's server (.ci/install-postgres) on Linux; "
            f"this is {sys.platform}: set WEAVER_PG_BIN to a server's bin folder to run this"
        )


def corpora_absent(reason: str) -> NoReturn:
    """The real vaults of ../shared/corpora are missing."""
    if on_ci() and os.environ.get("WEAVER_CORPORA_OPTIONAL", "").lower() != "true":
        pytest.fail(f"required under CI=true: {reason}")
    pytest.skip(reason)
