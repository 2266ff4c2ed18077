"""`weaver worker`: run workflow executions from the job system, on any host (PostgreSQL only).

A worker loads the plugins (as the writer does), opens the shared cache, and runs the
Procrastinate worker on the queues of its enabled workflows (`weaver.engine.jobs`): each job is
one execution, run by the same engine code as on a single machine and recorded in the same
`executions` table. Beside it, the worker hands back the jobs of workers whose heartbeat
stopped, and follows the change feed as any engine does (the feed's cursor makes that once
across processes), so file events start their workflows even while the writer restarts.

A workflow that writes notes needs the vault's files where the worker runs (`vault` in the
config, a shared volume); one that only reads the cache does not.

SIGINT or SIGTERM: no new job is taken, runs under way get a few seconds to end, then the
rest are recorded as interrupted and exit code 0.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from functools import partial

import anyio
import structlog

from weaver.cache.dialect import is_postgres
from weaver.config import Settings
from weaver.engine import WorkflowEngine, load_registry
from weaver.engine.jobs import SCHEDULE_TASK, build_worker_app, watch_stalled_jobs, worker_queues
from weaver.engine.worker_schedules import fire_schedules, worker_schedules
from weaver.errors import ConfigError
from weaver.host.signals import run_until_signalled
from weaver.runtime.app import open_app
from weaver.runtime.engines import engine_for

log = structlog.get_logger(__name__)

# Runs under way get this long to end after a stop signal (within signals.STOP_GRACE_S).
SHUTDOWN_GRACE_S = 4.0


def run_worker(settings: Settings, concurrency: int | None = None) -> None:
    """Run until SIGINT or SIGTERM."""
    if not is_postgres(settings.db_url):
        raise ConfigError(
            "weaver worker needs database_url = 'postgresql+psycopg://...': on SQLite the "
            "daemon runs the workflows itself"
        )
    app = open_app(settings)
    try:
        engine = engine_for(app, load_registry(settings), background="jobs", poll=True)
        engine.start()
        try:
            queues = worker_queues(engine)
            if not queues:
                log.warning("no enabled workflow: this worker will never take a job")
            run = partial(_work, engine, queues, concurrency or settings.workflow_workers)
            anyio.run(run_until_signalled, run, engine.record_interrupted)
        finally:
            engine.stop()
    finally:
        app.close()
    log.info("worker stopped")


async def _work(
    engine: WorkflowEngine, queues: list[str], concurrency: int, stop: anyio.Event
) -> None:
    settings = engine.settings
    jobs_app = build_worker_app(engine)
    async with jobs_app.open_async():
        log.info(
            "worker started",
            process=engine.process,
            workflows=len(queues),
            concurrency=concurrency,
        )
        worker = asyncio.create_task(
            jobs_app.run_worker_async(
                queues=queues,
                name=engine.process,
                concurrency=concurrency,
                install_signal_handlers=False,
                update_heartbeat_interval=settings.worker_heartbeat_s,
                stalled_worker_timeout=settings.worker_stalled_s,
                shutdown_graceful_timeout=SHUTDOWN_GRACE_S,
                delete_jobs="successful",
            )
        )
        watcher = asyncio.create_task(watch_stalled_jobs(jobs_app, settings.worker_stalled_s))
        grace = timedelta(seconds=settings.schedule_misfire_grace_s)
        schedules = worker_schedules(engine)
        ticks = asyncio.create_task(fire_schedules(jobs_app, schedules, SCHEDULE_TASK, grace))
        try:
            await _first_of(stop, worker)
        finally:
            for task in (watcher, ticks, worker):
                task.cancel()
            await asyncio.gather(worker, watcher, ticks, return_exceptions=True)


async def _first_of(stop: anyio.Event, worker: asyncio.Task[None]) -> None:
    """Until a stop signal, or the worker's end (a lost database: raised here)."""
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({stopped, worker}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if worker.done():
        worker.result()
