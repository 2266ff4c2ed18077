"""Shared fixtures: vaults built in tmp_path, and a Weaver app (settings + cache) over them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import structlog

from weaver.app import App, open_app
from weaver.config import Settings

WriteNotes = Callable[[dict[str, str | bytes]], Path]


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create `files` (vault-relative path -> text or bytes) under `root`."""
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def default_logging() -> Iterator[None]:
    """Undo `configure_logging` after a test that ran the CLI in-process: it points structlog at
    that test's captured stderr, which pytest closes, and a later log line would fail on it."""
    yield
    structlog.reset_defaults()


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def write_notes(vault_dir: Path) -> WriteNotes:
    return lambda files: write_files(vault_dir, files)


@pytest.fixture
def settings(vault_dir: Path) -> Settings:
    return Settings(vault=vault_dir)


@pytest.fixture
def app(settings: Settings) -> Iterator[App]:
    """A migrated file-backed cache over `vault_dir` (WAL needs a real file)."""
    weaver_app = open_app(settings)
    yield weaver_app
    weaver_app.close()
