"""How each host builds its workflow engine from its `App`: the daemon and the MCP server
(`hosted_engine`), a reader (`reading_engine`), a reader beside the writer
(`queueing_engine`), the CLI and the worker (`engine_for`).

The engine itself takes only what it uses (registry, cache, vault, settings, bus); the `App`
is above it, so these factories live here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from weaver.config import Settings
from weaver.engine.apart import ApartRuns
from weaver.engine.dispatch import Background
from weaver.engine.engine import WorkflowEngine
from weaver.engine.jobs import JobQueue
from weaver.engine.loader import load_registry
from weaver.engine.registry import Registry
from weaver.runtime.app import App


def engine_for(
    app: App,
    registry: Registry,
    background: Background = "threads",
    poll: bool = False,
    jobs: JobQueue | None = None,
    apart: ApartRuns | None = None,
) -> WorkflowEngine:
    """The engine over the app's cache, vault and bus. `background="jobs"` (see
    `background_for`) makes the job queue when none is given; `apart`: see `WorkflowEngine`."""
    if background == "jobs" and jobs is None:
        jobs = JobQueue(app.settings.db_url)
    return WorkflowEngine(
        registry,
        db=app.db,
        vault=app.vault,
        settings=app.settings,
        bus=app.bus,
        background=background,
        poll=poll,
        jobs=jobs,
        apart=apart,
    )


def background_for(settings: Settings, local: Background) -> Background:
    """How a host's engine runs work: on PostgreSQL through the job system (`jobs`: `weaver
    worker` processes run everything, so that runs, schedules and retries hold across the
    cluster), else `local`. Hosts (daemon, server, CLI) ask this; an engine built directly,
    as the tests build them, runs as it is told on either backend."""
    return "jobs" if settings.db_url.startswith("postgresql") else local


def reading_engine(app: App, registry: Registry | None = None) -> WorkflowEngine:
    """The engine as a reader hosts it: the registry loaded, nothing run here.

    Nothing written either, unless the reader has a queue (`App.queue_db`, PostgreSQL): then
    `trigger` records the pending row and defers its job in one transaction through that
    engine, exactly as the writer does, and a sync trigger waits on the row for a worker. It
    neither follows the change feed nor prunes: those are the writer's and the workers'."""
    loaded = registry or load_registry(app.settings)
    if app.queue_db is None:
        engine = engine_for(app, loaded, "queue")
    else:
        engine = WorkflowEngine(
            loaded,
            db=app.queue_db,
            vault=app.vault,
            settings=app.settings,
            background="jobs",
            jobs=JobQueue(app.settings.db_url),
        )
    engine.start_reading()
    return engine


@contextmanager
def queueing_engine(app: App, registry: Registry | None = None) -> Iterator[WorkflowEngine]:
    """The engine of a reader process beside the writer (`host.http_readers`): a sync trigger
    runs in the caller's thread, everything else is left queued for the writer's engine,
    which alone follows the change feed. Reader processes are there to answer reads: the
    workflows' work stays in the writer's process rather than taking the readers' core.
    On PostgreSQL, as every host there, it defers each run as a job for the workers (a row
    left pending would wait for nobody: the writer's engine runs nothing there)."""
    background = background_for(app.settings, "queue")
    engine = engine_for(app, registry or load_registry(app.settings), background)
    engine.start(subscribe=False)
    try:
        yield engine
    finally:
        engine.stop()


@contextmanager
def hosted_engine(
    app: App, registry: Registry | None = None, *, schedules: bool = False
) -> Iterator[WorkflowEngine]:
    """The engine as the daemon (`schedules=True`) or the MCP server hosts it: plugins loaded,
    interrupted runs recovered, vault events followed, queued rows polled, schedules run; a
    burst of runs (a first index's) run in a child process (`engine.apart`) in a lasting
    process."""
    from weaver.engine.scheduler import WorkflowScheduler  # APScheduler: not for the CLI's start

    background = background_for(app.settings, "threads")
    # A lasting process's bursts of runs go to a child, as its big reconciles do (`App`'s
    # `lasting`): the child loads the registry the settings give, as this one is loaded.
    apart = ApartRuns(app.settings, app.vault) if app.indexer.apart is not None else None
    engine = engine_for(
        app,
        registry or load_registry(app.settings),
        background=background,
        poll=True,
        apart=apart if registry is None else None,
    )
    engine.start()
    # On PostgreSQL the workers fire schedules (engine.worker_schedules, once per tick).
    scheduler = WorkflowScheduler(engine) if schedules and background != "jobs" else None
    try:
        if scheduler is not None:
            scheduler.start()
            engine.scheduler = scheduler
        yield engine
    finally:
        if scheduler is not None:
            scheduler.stop()
        engine.stop()
