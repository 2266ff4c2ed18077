"""Shared fixtures: vaults built in tmp_path, and a Weaver app (settings + cache) over them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from tests.absent import linux_piece_absent, postgres_off_linux
from tests.helpers import EngineFactory, WriteNotes, write_files
from tests.migrated_cache import make_template, upgrade_from_template
from tests.pg_server import PostgresServer, PostgresUnavailableError, start_server
from weaver.cache import db
from weaver.cache.db import open_cache_engine
from weaver.config import DEFAULT_TOOLSETS, TOOLSETS, Settings
from weaver.engine import Registry, Workflow, WorkflowEngine
from weaver.engine.dispatch import Background
from weaver.engine.registry import apply_overrides
from weaver.runtime.app import App, open_app

SHIPPED_TOOLSETS = DEFAULT_TOOLSETS  # before `every_toolset` changes it
MIGRATE_TO_HEAD = db.upgrade_to_head  # before `migrated_sqlite_template` changes it


def plain_structlog_defaults() -> None:
    """structlog's defaults, except that a logged exception is printed as Python prints it.
    The default renderer draws it with rich, each frame's source and locals included: a test
    whose server logged one exception took 25 s, most of it drawing that. Weaver's own
    configuration (`weaver.log`) prints tracebacks as plain text too."""
    structlog.reset_defaults()
    processors = structlog.get_config()["processors"]
    renderer = structlog.dev.ConsoleRenderer(
        colors=False, exception_formatter=structlog.dev.plain_traceback
    )
    structlog.configure(processors=[*processors[:-1], renderer])


@pytest.fixture(autouse=True)
def default_logging() -> Iterator[None]:
    """Undo `configure_logging` after a test that ran the CLI in-process: it points structlog and
    the stdlib root logger at that test's captured stderr, which pytest closes, and a later log
    line would fail on it."""
    root = logging.getLogger()
    handlers = list(root.handlers)
    yield
    plain_structlog_defaults()
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)


def pytest_configure(config: pytest.Config) -> None:
    plain_structlog_defaults()  # before the first test, as after each (`default_logging`)


@pytest.fixture(scope="session", autouse=True)
def embedding_cache(request: pytest.FixtureRequest) -> Iterator[Path]:
    """The folder distilled static embedding models are kept in, for the whole session and its
    subprocesses: pytest's cache folder, not the user's `~/.cache/weaver`. Distilling takes
    tens of seconds, once per model file: a later run (or the other xdist worker, which waits
    on the distiller's lock) reuses the matrix; CI starts with none and distils it once."""
    cache = getattr(request.config, "cache", None)  # None with -p no:cacheprovider
    xdg = cache.mkdir("weaver-xdg-cache") if cache else request.config.rootpath / ".weaver-xdg"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(xdg))
        yield xdg / "weaver"


@pytest.fixture(autouse=True)
def no_embedding_worker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Served vaults start no embedding worker unless the test is marked `embedding`: the
    worker loads a 23 MB model and embeds every served vault, which would slow every MCP test
    for nothing it checks. The worker's own tests (tests/semantic/) run it for real."""
    if request.node.get_closest_marker("embedding") is None:
        monkeypatch.setattr("weaver.runtime.lifespan._start_embedding", lambda _state: None)


@pytest.fixture(scope="session", autouse=True)
def every_toolset() -> Iterator[None]:
    """Servers built in the tests, in their process or in one they start, serve every toolset
    (module-scoped servers too, hence the session): a tool's tests call it whichever toolset it
    is in. The toolsets' own tests, marked `default_toolsets`, see the shipped default."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("weaver.config.DEFAULT_TOOLSETS", TOOLSETS)
        patch.setenv("WEAVER_TOOLSETS", "all")
        yield


@pytest.fixture(scope="session", autouse=True)
def child_bytecode() -> Iterator[None]:
    """Python processes the tests start write bytecode even where PYTHONDONTWRITEBYTECODE is
    set (as `.ci/install-check` and the startup benchmark do): else every `weaver` process
    compiled Weaver's modules again, a third of a second of CPU per start. The processes
    started with an environment of their own already did. (A PYTHONPYCACHEPREFIX of the
    session instead would compile the dependencies once more too, in the first process: a
    daemon missed its 30 s start on a loaded machine.)"""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        yield


@pytest.fixture(scope="session", autouse=True)
def migrated_sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """New SQLite caches opened in the test processes are copies of one migrated once here
    (tests/migrated_cache.py): migrating each from nothing took a fifth of the app tests' time."""
    template = make_template(tmp_path_factory.mktemp("schema") / "cache.db")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(db, "upgrade_to_head", upgrade_from_template(template, MIGRATE_TO_HEAD))
        yield template


@pytest.fixture(autouse=True)
def real_migrations(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests marked `real_migrations` make every cache through Alembic, as users' caches are."""
    if request.node.get_closest_marker("real_migrations") is not None:
        monkeypatch.setattr(db, "upgrade_to_head", MIGRATE_TO_HEAD)


@pytest.fixture(autouse=True)
def default_toolsets(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("default_toolsets") is not None:
        monkeypatch.setattr("weaver.config.DEFAULT_TOOLSETS", SHIPPED_TOOLSETS)
        monkeypatch.delenv("WEAVER_TOOLSETS")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the session (tests/pg_server.py). Without the server
    binaries the tests that need it skip, naming why; under CI=true that is a failure, since
    .ci/install-postgres installs them. Off Linux they skip unless WEAVER_PG_BIN is set."""
    postgres_off_linux()
    try:
        server = start_server()
    except PostgresUnavailableError as exc:
        linux_piece_absent(f"PostgreSQL: {exc}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_migrated_template(postgres_server: PostgresServer) -> str:
    """A database migrated to head once per session, copied for each test that opens an app:
    copying it is much faster than running every migration again."""
    name = postgres_server.create_database()
    open_cache_engine(postgres_server.url(name)).dispose()
    return name


@pytest.fixture(scope="session")
def postgres_spare_databases() -> list[str]:
    """Databases at head emptied after their test, for the next one to take."""
    return []


@pytest.fixture
def postgres_url(
    postgres_server: PostgresServer,
    postgres_migrated_template: str,
    postgres_spare_databases: list[str],
) -> Iterator[str]:
    """A fresh database at the newest schema on the session's server: a spare one emptied
    by an earlier test, else a copy of the migrated template. After the test it is emptied
    for the next, or dropped when the test changed its schema."""
    if postgres_spare_databases:
        name = postgres_spare_databases.pop()
    else:
        name = postgres_server.create_database(template=postgres_migrated_template)
    yield postgres_server.url(name)
    if postgres_server.reset_database(name, like=postgres_migrated_template):
        postgres_spare_databases.append(name)
    else:
        postgres_server.drop_database(name)


@pytest.fixture
def postgres_empty_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database with no schema at all (for the migration tests)."""
    name = postgres_server.create_database()
    yield postgres_server.url(name)
    postgres_server.drop_database(name)


@pytest.fixture
def pg_app(vault_dir: Path, postgres_url: str) -> Iterator[App]:
    """An app over an empty vault whose cache is a fresh PostgreSQL database (the tests of
    what PostgreSQL alone does: its search, the job system)."""
    app = open_app(Settings(vault=vault_dir, database_url=postgres_url))
    yield app
    app.close()


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def write_notes(vault_dir: Path) -> WriteNotes:
    return lambda files: write_files(vault_dir, files)


BACKENDS = ("sqlite", "postgres")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked `both_backends` that build an app run once per cache backend (the same
    test, not a copy): `backend` feeds `db_url`, which `settings` uses."""
    definition = metafunc.definition
    if "backend" not in metafunc.fixturenames or not definition.get_closest_marker("both_backends"):
        return
    backends = [pytest.param("sqlite")]
    if not definition.get_closest_marker("sqlite_only"):  # SQLite by nature: WAL, FTS5, ...
        backends.append(pytest.param("postgres", marks=pytest.mark.postgres))
    # Module scope: a module's shared fixtures (`module_db_url`) are built once per backend.
    metafunc.parametrize("backend", backends, scope="module")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On PostgreSQL, the MCP tests run in the newest protocol mode only: the `legacy` one
    shows the same answers differently framed, and would double their time there. Then the
    modules of long tests go first (`long_modules_first`)."""
    dropped = [item for item in items if _postgres_legacy(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not _postgres_legacy(item)]
    long_modules_first(items)


LONG_MARKERS = ("slow", "cluster", "browser")


def long_modules_first(items: list[pytest.Item]) -> None:
    """Whole modules holding a test marked slow, cluster or browser run before the rest, each
    module's tests in their order. In collection order the top-level process tests (the
    wheel, the installers, the container, CI's workflow files) came last: under xdist a worker
    could be left alone with a test of a minute while the other had nothing to do. Short tests
    at the end let the workers (`--dist worksteal` in pyproject.toml) finish together."""
    long = {item.path for item in items if _long(item)}
    items.sort(key=lambda item: item.path not in long)  # stable: else in collection order


def _long(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) is not None for name in LONG_MARKERS)


def _postgres_legacy(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is None or callspec.params.get("backend") != "postgres":
        return False
    return "legacy" in callspec.params.values()


@pytest.fixture(scope="module")
def backend() -> str:
    """The cache's database: SQLite unless the test is marked `both_backends`. Module scope,
    so that a module's shared fixtures (`module_db_url`) may ask for it too."""
    return "sqlite"


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest) -> str | None:
    """The cache URL for `backend`: None for the default SQLite file in the vault, else a
    fresh database on the session's PostgreSQL server."""
    if backend == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return None


@pytest.fixture(scope="module")
def module_db_url(backend: str, request: pytest.FixtureRequest) -> Iterator[str | None]:
    """`db_url` for a module's shared fixtures: None (SQLite in the vault), or a database on
    the session's PostgreSQL server kept for the module."""
    if backend != "postgres":
        yield None
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = server.create_database(template=request.getfixturevalue("postgres_migrated_template"))
    yield server.url(name)
    server.drop_database(name)


@pytest.fixture
def empty_db_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A database with no schema yet, for `backend`: a new SQLite file, or a new PostgreSQL
    database (the migration tests)."""
    if backend == "postgres":
        url: str = request.getfixturevalue("postgres_empty_url")
        return url
    return f"sqlite:///{tmp_path / 'cache.db'}"


@pytest.fixture
def settings(vault_dir: Path, db_url: str | None) -> Settings:
    return Settings(vault=vault_dir, database_url=db_url)


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
