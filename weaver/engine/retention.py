"""Retention: how much run history, workflow records, change feed and audit log the cache keeps.

Applied when an engine starts and then hourly while it polls (`prune_if_due`); the settings'
0 means no limit.
"""

from __future__ import annotations

import time

import structlog
from sqlalchemy import Engine
from structlog.typing import FilteringBoundLogger

from weaver.cache import audit_log, executions, feed
from weaver.cache.records import prune_superseded
from weaver.config import Settings
from weaver.engine.registry import Registry

DAY_MS = 86_400_000
# Pruning runs at start and then this often while the engine polls.
PRUNE_EVERY_SECONDS = 3600.0
# Superseded workflow records deleted per transaction: short enough not to hold up the writer.
PRUNE_BATCH = 5_000
# How long the engine remembers its own vault writes (for events of a daemon catching up).
WRITE_MEMORY_MS = 7 * DAY_MS


class Retention:
    def __init__(self, db: Engine, settings: Settings, registry: Registry) -> None:
        self._db = db
        self._settings = settings
        self._registry = registry
        self._log: FilteringBoundLogger = structlog.get_logger("weaver.engine")
        self._last = time.monotonic()

    def prune(self, now: int | None = None) -> int:
        """Ended executions by the history settings, superseded workflow records by each
        workflow's `records_retention_days`, the engine's own writes and the change feed by
        their fixed spans, the audit log by `audit_retention_days`. Returns how many
        executions and records went."""
        now = time.time_ns() // 1_000_000 if now is None else now
        self._last = time.monotonic()
        days = self._settings.history_retention_days
        keep = self._settings.history_retention_count
        with self._db.begin() as conn:
            removed = executions.prune(
                conn,
                older_than=now - days * DAY_MS if days > 0 else None,
                keep=keep if keep > 0 else None,
            )
            executions.prune_writes(conn, now - WRITE_MEMORY_MS)
            feed.prune(conn, now)
            if self._settings.audit_retention_days > 0:
                audit_log.prune(conn, now - self._settings.audit_retention_days * DAY_MS)
        if removed:
            self._log.info("execution history pruned", removed=removed)
        for workflow in self._registry:
            if workflow.records_retention_days > 0:
                cutoff = now - workflow.records_retention_days * DAY_MS
                removed += self._prune_records(workflow.id, cutoff)
        return removed

    def prune_if_due(self) -> None:
        """Prune when the last prune is `PRUNE_EVERY_SECONDS` old."""
        if time.monotonic() - self._last > PRUNE_EVERY_SECONDS:
            self.prune()

    def _prune_records(self, workflow_id: str, older_than: int) -> int:
        """Superseded records of one workflow, in batches: the first prune after an upgrade may
        meet months of history, and one long transaction would hold up the indexer's writes."""
        removed = 0
        while True:
            with self._db.begin() as conn:
                batch = prune_superseded(conn, workflow_id, older_than, PRUNE_BATCH)
            removed += batch
            if batch < PRUNE_BATCH:
                break
        if removed:
            self._log.info("superseded records pruned", workflow=workflow_id, removed=removed)
        return removed
