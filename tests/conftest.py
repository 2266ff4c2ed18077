"""Shared fixtures: vaults built in tmp_path, and a Weaver app (settings + cache) over them."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import structlog

from tests.pg_server import PostgresServer, PostgresUnavailableError, start_server
from weaver.config import Settings
from weaver.engine import Registry, Workflow, WorkflowEngine
from weaver.engine.engine import Background
from weaver.engine.registry import apply_overrides
from weaver.host.app import App, open_app

WriteNotes = Callable[[Mapping[str, str | bytes]], Path]
EngineFactory = Callable[..., WorkflowEngine]


def write_files(root: Path, files: Mapping[str, str | bytes]) -> Path:
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
    """Undo `configure_logging` after a test that ran the CLI in-process: it points structlog and
    the stdlib root logger at that test's captured stderr, which pytest closes, and a later log
    line would fail on it."""
    root = logging.getLogger()
    handlers = list(root.handlers)
    yield
    structlog.reset_defaults()
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)


@pytest.fixture(autouse=True)
def no_embedding_worker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Served vaults start no embedding worker unless the test is marked `embedding`: the
    worker loads a 23 MB model and embeds every served vault, which would slow every MCP test
    for nothing it checks. The worker's own tests (tests/semantic/) run it for real."""
    if request.node.get_closest_marker("embedding") is None:
        monkeypatch.setattr("weaver.mcp_server.lifecycle._start_embedding", lambda _state: None)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the session (tests/pg_server.py). Without the server
    binaries the tests that need it skip, naming why; under CI=true that is a failure, since
    .ci/install-postgres installs them."""
    try:
        server = start_server()
    except PostgresUnavailableError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required under CI=true: {exc}")
        pytest.skip(str(exc))
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database on the session's server, dropped after the test."""
    name = postgres_server.create_database()
    yield postgres_server.url(name)
    postgres_server.drop_database(name)


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


@pytest.fixture
def make_engine(app: App) -> Iterator[EngineFactory]:
    """Engines over `app`'s cache running the given workflows, stopped at the end of the test.
    Keyword settings (`workflows={...}`, `workflow_workers=2`, ...) override `app.settings`."""
    started: list[WorkflowEngine] = []

    def make(
        *workflows: Workflow,
        background: Background = "inline",
        poll: bool = False,
        subscribe: bool = True,
        **settings: Any,
    ) -> WorkflowEngine:
        registry = Registry()
        for item in workflows:
            registry.register(item)
        configured = app.settings.model_copy(update=settings)
        apply_overrides(registry, configured.workflows)
        engine = WorkflowEngine(
            registry,
            db=app.db,
            vault=app.vault,
            settings=configured,
            bus=app.bus,
            background=background,
            poll=poll,
        )
        engine.start(subscribe=subscribe)
        started.append(engine)
        return engine

    yield make
    for engine in started:
        engine.stop()
