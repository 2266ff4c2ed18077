"""SQL over the tables two job libraries keep beside the cache.

Procrastinate's (`procrastinate_*`, on PostgreSQL: the workers' queue) and APScheduler's job
store (its own SQLite file, `<vault>/.weaver/scheduler.db`): neither is in the Alembic schema,
but every statement Weaver runs on them is here, with the rest of its SQL.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog
from sqlalchemy import select, update

if TYPE_CHECKING:
    import procrastinate
    from apscheduler.jobstores.sqlalchemy import (  # type: ignore[import-untyped]
        SQLAlchemyJobStore,
    )

log = structlog.get_logger(__name__)

# Serialises creating Procrastinate's tables when several processes start at once.
SCHEMA_LOCK_KEY = "weaver-job-schema"

# A stored job's state (APScheduler's pickled dict) -> the state to store instead, or None.
JobStateRewrite = Callable[[dict[str, Any]], dict[str, Any] | None]


def ensure_job_schema(conninfo: str) -> bool:
    """Create Procrastinate's tables if this database has none yet; True if it did. Guarded by
    a transaction-level advisory lock: the writer and every worker call it as they start."""
    import psycopg
    from procrastinate.schema import SchemaManager

    with psycopg.connect(conninfo) as conn:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (SCHEMA_LOCK_KEY,))
        row = conn.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()
        if row is not None and row[0] is not None:
            return False
        conn.execute(SchemaManager.get_schema())
    log.info("job system tables created")
    return True


async def last_periodic_defer(
    app: procrastinate.App, task_name: str, periodic_id: str
) -> datetime | None:
    """The latest tick deferred under a schedule's id (Procrastinate's periodic defers)."""
    row = await app.connector.execute_query_one_async(
        "SELECT max(defer_timestamp) AS last FROM procrastinate_periodic_defers "
        "WHERE task_name = %(task_name)s AND periodic_id = %(periodic_id)s",
        task_name=task_name,
        periodic_id=periodic_id,
    )
    last = row["last"]
    return None if last is None else datetime.fromtimestamp(last, UTC)


def rewrite_stored_jobs(store: SQLAlchemyJobStore, rewrite: JobStateRewrite) -> int:
    """Store `rewrite`'s state for each job of the store it changes, in one transaction, the
    rest of each job (its next run time) kept; returns how many changed."""
    table = store.jobs_t
    with store.engine.begin() as conn:
        rows = conn.execute(select(table.c.id, table.c.job_state)).all()
        moved = 0
        for job_id, blob in rows:
            state = rewrite(pickle.loads(blob))  # plain values and APScheduler's own classes
            if state is not None:
                blob = pickle.dumps(state, store.pickle_protocol)
                conn.execute(update(table).where(table.c.id == job_id).values(job_state=blob))
                moved += 1
    return moved
