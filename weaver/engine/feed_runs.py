"""The change feed's events turned into queued runs: one pending execution per matching
workflow and batch of events, queued in the transaction that moves the engine's cursor.

The engine consumes the feed with it (`WorkflowEngine.consume_feed`), and so does the child
process a burst of the feed is handed to (`engine.apart`): the same cursor, the same runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import structlog
from sqlalchemy import Connection, Engine

from weaver.cache import executions, feed
from weaver.engine.context import FileTrigger, Trigger
from weaver.engine.definition import Workflow
from weaver.engine.registry import Registry
from weaver.engine.runs import Runs
from weaver.vault.events import VaultEvent

log = structlog.get_logger("weaver.engine")

# The engine's name as a consumer of the change feed (`weaver.cache.feed`): every engine over
# one cache shares it, so a change starts its workflows once, whichever process queues them.
FEED_CONSUMER = "workflows"
# Events taken from the feed per transaction (and at most per file-triggered run).
FEED_BATCH = 2000


class FeedRuns:
    """Queues the runs of the feed's events (and of events given outright) for one registry."""

    def __init__(self, registry: Registry, db: Engine, runs: Runs) -> None:
        self.registry = registry
        self.db = db
        self.runs = runs

    def take_batch(self) -> list[str] | None:
        """The runs of the next batch of the feed, queued; None when there is nothing after
        the cursor (or another process moved the cursor first: it queued those runs)."""
        try:
            return self._queue_batch()
        except _CursorMovedError:
            return None

    def backlog(self, at_most: int) -> int:
        """How many events wait after the cursor, counted up to `at_most`."""
        with self.db.connect() as conn:
            position = feed.get_cursor(conn, FEED_CONSUMER)
            return feed.count_after(conn, position or 0, at_most)

    def _queue_batch(self) -> list[str] | None:
        with self.db.begin() as conn:
            position = feed.get_cursor(conn, FEED_CONSUMER)
            entries = feed.read_after(conn, position or 0, FEED_BATCH)
            if not entries:
                return None
            oldest = entries[0].id
            if position is not None and oldest > position + 1 and oldest == feed.oldest_id(conn):
                log.warning("change feed pruned past this cursor", cursor=position)
            queued = self.queue_events(conn, [entry.event for entry in entries])
            if not feed.advance_cursor(conn, FEED_CONSUMER, position, entries[-1].id):
                raise _CursorMovedError  # rolls back the runs queued here
        return queued

    def queue_events(self, conn: Connection, events: Sequence[VaultEvent]) -> list[str]:
        """In the caller's transaction: one pending execution per matching workflow.

        Events for notes whose current content the engine wrote itself are left out, so a
        workflow writing into a folder it watches does not start itself again.
        """
        matching = [
            (workflow, [event for event in events if workflow.matches(event)])
            for workflow in self.registry
            if workflow.enabled and workflow.on_file
        ]
        matching = [(workflow, found) for workflow, found in matching if found]
        if not matching:
            return []
        own = _own_changes(conn, events)
        queued = []
        for workflow, found in matching:
            theirs = tuple(event for event in found if event.path not in own)
            if theirs:
                trigger: Trigger = FileTrigger(theirs)
                queued.append(self.runs.enqueue(workflow, trigger, defaults(workflow), conn).id)
            else:
                log.debug("own vault writes ignored", workflow_id=workflow.id)
        return queued


def _own_changes(conn: Connection, events: Sequence[VaultEvent]) -> set[str]:
    """The events' paths whose current content the engine wrote itself."""
    present = {event.path for event in events if event.kind != "delete"}
    deleted = {event.path for event in events if event.kind == "delete"}
    own = executions.self_written(conn, present, deleted)
    executions.forget_deletions(conn, present - own)
    return own


class _CursorMovedError(Exception):
    """Another process consumed this batch of the feed first."""


def defaults(workflow: Workflow) -> dict[str, Any]:
    """The input of a run started by a file event or a schedule: the model's defaults."""
    return workflow.input_model.model_validate({}).model_dump(mode="json")
