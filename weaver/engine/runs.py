"""The `executions` table as the engine's queue: rows queued, claimed, run, waited on, and
queued again when the process running them stopped.

Every run starts as a `pending` row, whatever asked for it; whoever has a free slot of its
workflow claims the row and runs it (`Executor`), so a workflow's `max_concurrent` holds
across processes. How a queued row reaches a runner beyond this process (a job of the job
system, or nothing: the row itself is the queue) is the `Deferral` given in.
"""

from __future__ import annotations

import secrets
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog
from sqlalchemy import Connection, Engine
from structlog.typing import FilteringBoundLogger

from weaver.cache import executions
from weaver.cache.executions import FAILED, PENDING, ExecutionRecord
from weaver.config import Settings
from weaver.engine.context import Trigger, trigger_detail, trigger_kind
from weaver.engine.definition import Workflow
from weaver.engine.execution import Executor, now_ms
from weaver.engine.live_runs import LiveRuns
from weaver.engine.processes import is_gone
from weaver.engine.registry import Registry
from weaver.engine.run_ends import RunEnds
from weaver.engine.workflow_errors import ExecutionNotFoundError
from weaver.vault.fs import Vault

# A run interrupted by its engine stopping is queued again, up to this many times plus its
# workflow's retries; one interrupted more often is given up (recorded failed, saying why).
# Generous: a desktop MCP client starts and closes `weaver serve` per conversation, so a long
# run can be cut short many times before a session lasts long enough; the bound is for a run
# that takes its process down each time (a crash, the OOM killer) and would loop forever.
RESUME_LIMIT = 20


class Deferral(Protocol):
    """How a row queued here reaches whoever runs it, in the transaction that queues it."""

    def defer(self, conn: Connection, execution_id: str, workflow: Workflow) -> None:
        """A new pending row."""

    def requeued(self, conn: Connection, execution_id: str, workflow: Workflow) -> None:
        """A row pending again after its run was interrupted."""


class Runs:
    """The runs of one registry over one cache, as this process (`process`) sees them."""

    def __init__(
        self,
        *,
        registry: Registry,
        db: Engine,
        vault: Vault,
        settings: Settings,
        process: str,
        deferral: Deferral,
        live: LiveRuns,
    ) -> None:
        self.registry = registry
        self.db = db
        self.settings = settings
        self.process = process
        self.live = live
        self._deferral = deferral
        self._log: FilteringBoundLogger = structlog.get_logger("weaver.engine")
        self.ends = RunEnds(db, process, live.stopping, live.notify)
        self.executor = Executor(
            db=db,
            vault=vault,
            settings=settings,
            process=process,
            live=live,
            ends=self.ends,
            requeue=self.requeue,
        )

    def get(self, execution_id: str) -> ExecutionRecord:
        with self.db.connect() as conn:
            record = executions.get_execution(conn, execution_id)
        if record is None:
            raise ExecutionNotFoundError(execution_id)
        return record

    def enqueue(
        self,
        workflow: Workflow,
        trigger: Trigger,
        data: dict[str, Any],
        conn: Connection | None = None,
    ) -> ExecutionRecord:
        """Insert a pending row (in `conn`'s transaction when given); returns it as inserted
        (so a sync run need not read it back)."""
        record = _pending(workflow, trigger, data)
        with nullcontext(conn) if conn is not None else self.db.begin() as conn:
            executions.insert_execution(
                conn,
                execution_id=record.id,
                workflow_id=record.workflow_id,
                workflow_name=record.workflow_name,
                trigger_kind=record.trigger_kind,
                trigger_detail=record.trigger_detail,
                input=record.input,
                created=record.created,
            )
            self._deferral.defer(conn, record.id, workflow)
        return record

    def list_pending(self) -> list[str]:
        """Pending rows of enabled workflows, oldest first (those queued elsewhere included)."""
        enabled = [workflow.id for workflow in self.registry if workflow.enabled]
        if not enabled:
            return []
        with self.db.connect() as conn:
            return [execution_id for execution_id, _ in executions.list_pending(conn, enabled)]

    def claim_and_run(self, execution_id: str, known: ExecutionRecord | None = None) -> str | None:
        """Claim the row and run it here; the workflow id if it ran, None if not claimable.

        `known` is the row as this process just inserted it (the claim still checks that it
        is pending), saving a read on the way of a sync trigger."""
        record = known
        if record is None:
            with self.db.connect() as conn:
                record = executions.get_execution(conn, execution_id)
        if record is None or record.status != PENDING or self.live.stopping.is_set():
            return None
        workflow = self.registry.get(record.workflow_id)
        if workflow is None or not workflow.enabled:
            return None  # not ours to run: another process may know it
        claimed_at = now_ms()
        with self.db.begin() as conn:
            if not executions.claim(
                conn, execution_id, workflow.policy.max_concurrent, self.process, claimed_at
            ):
                return None
        # A pending row's attempt is its interrupted attempts' count: the claim counts on.
        self.executor.execute(workflow, record, claimed_at, record.attempt + 1)
        return workflow.id

    def drive(self, execution_id: str) -> None:
        """Run this row if a slot is free, then the workflow's next pending rows while any."""
        try:
            current: str | None = execution_id
            while current is not None and not self.live.stopping.is_set():
                ran = self.claim_and_run(current)
                current = self._next_pending(ran) if ran else None
        except Exception:
            self._log.exception("workflow dispatch failed", execution_id=execution_id)

    def _next_pending(self, workflow_id: str) -> str | None:
        with self.db.connect() as conn:
            pending = executions.list_pending(conn, [workflow_id], limit=1)
        return pending[0][0] if pending else None

    def run_to_end(self, queued: ExecutionRecord) -> ExecutionRecord:
        """Run the row here when a slot is free, else wait for whoever runs it."""
        known: ExecutionRecord | None = queued
        while True:
            self.claim_and_run(queued.id, known)
            known = None
            record = self.get(queued.id)
            if record.done:
                return record
            self.live.wait()

    def cancel_pending(self, execution_id: str, message: str) -> bool:
        """End a run still pending as cancelled; False when it is pending no more."""
        with self.db.begin() as conn:
            return executions.finish(
                conn,
                execution_id,
                status=executions.CANCELLED,
                now=now_ms(),
                message=message,
                from_status=(PENDING,),
            )

    def requeue(self, conn: Connection, record: ExecutionRecord, reason: str) -> str | None:
        """In the caller's transaction: `requeue_interrupted` under this workflow's limit, and
        the deferral told of a row pending again. Returns the status written."""
        workflow = self.registry.get(record.workflow_id)
        limit = RESUME_LIMIT + (workflow.policy.retries if workflow is not None else 0)
        status = executions.requeue_interrupted(
            conn, record, now=now_ms(), reason=reason, limit=limit
        )
        if status == PENDING and workflow is not None:
            self._deferral.requeued(conn, record.id, workflow)
        if status == FAILED:
            self._log.error("interrupted execution given up", execution_id=record.id)
        return status

    def recover_interrupted(self) -> list[str]:
        """Queue again the running rows whose process is gone (it crashed, was killed): each
        runs at its next attempt, now that an engine starts. Returns their ids."""
        with self.db.begin() as conn:
            gone = [
                (execution_id, label)
                for execution_id, label, started in executions.list_running(conn)
                if not self.live.is_running(execution_id) and is_gone(label, started)
            ]
            for execution_id, label in gone:
                record = executions.get_execution(conn, execution_id)
                if record is not None:
                    reason = f"interrupted: the process running it ({label}) stopped"
                    self.requeue(conn, record, reason)
        if gone:
            self._log.warning("interrupted executions queued again", count=len(gone))
        return [execution_id for execution_id, _ in gone]

    def record_interrupted(self) -> int:
        """Queue again every run this process has under way: for a process about to end
        without waiting for them (`host.signals`). Returns how many."""
        reason = f"interrupted: the process running it ({self.process}) stopped"
        with self.db.begin() as conn:
            mine = [i for i, label, _ in executions.list_running(conn) if label == self.process]
            records = [executions.get_execution(conn, i) for i in mine]
            done = sum(
                self.requeue(conn, record, reason) is not None
                for record in records
                if record is not None
            )
        self._log.warning("runs recorded as interrupted", count=done)
        return done


def new_execution_id() -> str:
    """`wf_exec_20251024_123456_1a2b3c4d`: sortable by time at a glance, unique by its tail."""
    return f"wf_exec_{datetime.now(UTC):%Y%m%d_%H%M%S}_{secrets.token_hex(4)}"


def _pending(workflow: Workflow, trigger: Trigger, data: dict[str, Any]) -> ExecutionRecord:
    return ExecutionRecord(
        id=new_execution_id(),
        workflow_id=workflow.id,
        workflow_name=workflow.name,
        trigger_kind=trigger_kind(trigger),
        trigger_detail=trigger_detail(trigger),
        input=data,
        status=PENDING,
        progress=0,
        message=None,
        attempt=0,
        started=None,
        finished=None,
        duration=None,
        result=None,
        error=None,
        traceback=None,
        process=None,
        created=now_ms(),
    )
