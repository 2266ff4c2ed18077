"""Running one claimed execution: its attempts (retries, delays), the context each attempt
sees, and recording how it ended.

A failing workflow, a timeout or a database hiccup while recording never escapes: each is
logged and recorded on the execution. A run its engine's stop interrupts is no failure of its
own: it is queued again (`Requeue`) and runs at its next attempt wherever an engine runs next.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import structlog
from pydantic import BaseModel
from sqlalchemy import Connection, Engine
from structlog.typing import FilteringBoundLogger

from weaver.cache import executions
from weaver.cache.executions import COMPLETED, FAILED, RUNNING, ExecutionRecord
from weaver.cache.records import WorkflowRecords
from weaver.config import Settings
from weaver.edits.attribution import Actor
from weaver.edits.steps import JournalledWriter, VaultAndCache
from weaver.engine.context import CacheReader, Trigger, WorkflowContext, trigger_from_row
from weaver.engine.definition import Workflow
from weaver.engine.live_runs import LiveRuns
from weaver.engine.run_ends import RunEnds
from weaver.engine.runner import Completed, Failed, Outcome, interrupted, run_attempt
from weaver.engine.workflow_errors import WorkflowError
from weaver.vault.fs import Vault

COMPLETED_MESSAGE = "Workflow completed"
CANCELLED_MESSAGE = "Workflow execution cancelled by request"

# In the caller's transaction: queue an interrupted run again, saying why; the status written.
Requeue = Callable[[Connection, ExecutionRecord, str], str | None]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Executor:
    """Runs claimed executions of this process (`process`) against one cache and vault."""

    def __init__(
        self,
        *,
        db: Engine,
        vault: Vault,
        settings: Settings,
        process: str,
        live: LiveRuns,
        ends: RunEnds,
        requeue: Requeue,
    ) -> None:
        self._db = db
        self._vault = vault
        self._settings = settings
        self._process = process
        self._live = live
        self._ends = ends
        self._requeue = requeue
        self._log: FilteringBoundLogger = structlog.get_logger("weaver.engine")

    def execute(
        self, workflow: Workflow, record: ExecutionRecord, claimed_at: int, first_attempt: int = 1
    ) -> None:
        """Run a row this process has claimed to its end, and record the end."""
        log = self._log.bind(execution_id=record.id, workflow_id=workflow.id)
        outcome: Outcome = interrupted()
        attempts = 0
        try:
            outcome, attempts = self._attempts(workflow, record, log, first_attempt)
        except Exception as exc:
            log.exception("execution failed inside the engine")
            outcome = Failed(f"engine error: {type(exc).__name__}: {exc}")
        finally:
            self._finish(record.id, outcome, log, attempts, claimed_at)
            self._live.end(record.id)

    def _attempts(
        self,
        workflow: Workflow,
        record: ExecutionRecord,
        log: FilteringBoundLogger,
        first_attempt: int = 1,
    ) -> tuple[Outcome, int]:
        """Run attempts until one completes or the policy's retries are spent. A run resumed
        after an interruption (or taken over from a stopped worker) starts at the interrupted
        attempt + 1 (`first_attempt`) and still has all its retries: the engine's stop was not
        the workflow's failure. A stop between attempts interrupts the run: its retry is
        still owed."""
        try:
            model = workflow.input_model.model_validate(record.input)
            trigger = trigger_from_row(record.trigger_kind, record.trigger_detail)
        except Exception as exc:
            return Failed(f"cannot start: {type(exc).__name__}: {exc}"), 0
        stopping = self._live.stopping
        attempt = first_attempt
        while True:
            cancelled = self._live.begin_attempt(record.id)
            if stopping.is_set():
                return interrupted(), attempt - 1
            ctx = self._context(workflow, record.id, attempt, model, trigger, cancelled, log)
            outcome = run_attempt(workflow, ctx, stopping)
            if (
                isinstance(outcome, Completed)
                or attempt - first_attempt >= workflow.policy.retries
                or self._live.cancel_requested(record.id)
            ):
                return outcome, attempt
            if stopping.is_set():
                return interrupted(), attempt
            attempt += 1
            delay = workflow.policy.delay_before(attempt)
            log.warning("workflow attempt failed; retrying", error=outcome.error, delay=delay)
            with self._db.begin() as conn:
                note = f"attempt {attempt} in {delay:g}s after: {outcome.error}"
                executions.start_attempt(conn, record.id, attempt, note)
            if stopping.wait(delay):
                return interrupted(), attempt - 1

    def _context(
        self,
        workflow: Workflow,
        execution_id: str,
        attempt: int,
        model: BaseModel,
        trigger: Trigger,
        cancelled: threading.Event,
        log: FilteringBoundLogger,
    ) -> WorkflowContext[Any]:

        def progress(percent: int, message: str | None) -> None:
            if cancelled.is_set():
                return
            with self._db.begin() as conn:
                executions.set_progress(conn, execution_id, percent, message)
            listener = self._live.listener_of(execution_id)
            if listener is not None:
                try:
                    listener(percent, message)
                except Exception:  # the listener's failure is no failure of the workflow
                    log.exception("progress listener failed")

        def refuse_if_cancelled() -> None:
            # A timed-out attempt's thread cannot be stopped, but it can be kept from writing.
            if cancelled.is_set():
                raise WorkflowError(f"execution {execution_id} was cancelled; write refused")

        def record_write(path: str, content_hash: str) -> None:
            refuse_if_cancelled()
            with self._db.begin() as conn:
                executions.record_write(conn, path, content_hash, execution_id, now_ms())

        return WorkflowContext(
            execution_id=execution_id,
            workflow_id=workflow.id,
            attempt=attempt,
            input=model,
            trigger=trigger,
            settings=workflow.settings,
            weaver_settings=self._settings,
            cache=CacheReader(self._db),
            vault=JournalledWriter(
                VaultAndCache(self._db, self._vault),
                f"workflow {workflow.id}",
                {"execution": execution_id},
                on_write=record_write,
                actor=Actor("workflow", workflow.id, workflow.id, f"workflow {workflow.id}"),
            ),
            records=WorkflowRecords(
                self._db, workflow.id, execution_id=execution_id, before_write=refuse_if_cancelled
            ),
            log=log.bind(attempt=attempt),
            cancelled=cancelled,
            progress_sink=progress,
        )

    def _finish(
        self,
        execution_id: str,
        outcome: Outcome,
        log: FilteringBoundLogger,
        attempts: int,
        claimed_at: int,
    ) -> None:
        cancelled = self._live.take_cancel_request(execution_id)
        if isinstance(outcome, Failed) and outcome.interrupted and not cancelled:
            self._end_interrupted(execution_id, outcome.error, log, attempts, claimed_at)
            return
        fields = _end_fields(outcome, cancelled)
        now = now_ms()
        if not self._ends.record(execution_id, fields, now):
            log.error("cannot record the end of an execution; retrying", error=self._ends.error)
            self._ends.keep(execution_id, fields, now)
        # The one canonical log event per execution; a failure at error level, so that a log
        # filtered to errors shows every run that did not do its work.
        finished = log.error if fields["status"] == FAILED else log.info
        finished(
            "workflow finished",
            status=fields["status"],
            attempts=attempts,
            duration_ms=now - claimed_at,
            error=fields.get("error"),
        )

    def _end_interrupted(
        self,
        execution_id: str,
        reason: str,
        log: FilteringBoundLogger,
        attempts: int,
        claimed_at: int,
    ) -> None:
        """Queue again a run this engine's stop interrupted. Not recorded (the cache is gone
        first), it stays `running` under this process, which the next start recovers alike."""
        try:
            with self._db.begin() as conn:
                record = executions.get_execution(conn, execution_id)
                status = None
                if record is not None and (record.status, record.process) == (
                    RUNNING,
                    self._process,
                ):
                    status = self._requeue(conn, record, reason)
        except Exception as exc:
            error = str(getattr(exc, "orig", None) or exc).partition("\n")[0]
            log.error("cannot queue an interrupted run again; the next start will", error=error)
            return
        log.warning(
            "workflow interrupted",
            status=status,
            attempts=attempts,
            duration_ms=now_ms() - claimed_at,
            error=reason,
        )


def _end_fields(outcome: Outcome, cancelled: bool) -> dict[str, Any]:
    """What `executions.finish` writes for a run that ended so."""
    if cancelled:
        return {"status": executions.CANCELLED, "message": CANCELLED_MESSAGE}
    match outcome:
        case Completed(result=result):
            return {"status": COMPLETED, "message": COMPLETED_MESSAGE, "result": result}
        case Failed(error=error, traceback=trace):
            return {"status": FAILED, "message": error, "error": error, "traceback": trace}
