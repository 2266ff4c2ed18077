"""A temp vault with built-in workflows running inline: change notes, read what they recorded.

Changes go through the real indexer (`apply_paths`), which publishes the events the watcher
would, and the engine runs each matching workflow before the call returns.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from weaver.cache import executions
from weaver.cache.executions import ExecutionRecord
from weaver.cache.records import RecordFilter, StoredRecord, list_records
from weaver.engine import Registry, WorkflowEngine, load_registry
from weaver.engine.payloads import TriggerWorkflowData
from weaver.runtime.app import App
from weaver.runtime.engines import engine_for

BUILTIN_IDS = (
    "file-change-logger",
    "markdown-analyzer",
    "concept-tracker",
    "file-deletion-monitor",
    "proof-daily-digest",
    "proof-task-complete",
    "proof-spec-kit-review",
)


class WorkflowVault:
    def __init__(self, app: App, engine: WorkflowEngine) -> None:
        self.app = app
        self.engine = engine
        self.root: Path = app.settings.vault

    def write(self, files: dict[str, str]) -> None:
        """Create or replace notes, as one batch of changes."""
        for path, text in files.items():
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        self.app.indexer.apply_paths(files)

    def delete(self, *paths: str) -> None:
        for path in paths:
            (self.root / path).unlink()
        self.app.indexer.apply_paths(paths)

    def move(self, old: str, new: str) -> None:
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        (self.root / old).rename(self.root / new)
        self.app.indexer.apply_paths([old, new])

    def trigger(self, workflow_id: str, input: dict[str, Any] | None = None) -> TriggerWorkflowData:
        return self.engine.trigger(workflow_id, input)

    def records(
        self, workflow_id: str, key: str | None = None, kind: str | None = None
    ) -> list[StoredRecord]:
        """Newest first."""
        with self.app.db.connect() as conn:
            return list_records(conn, RecordFilter(workflow_id, key, kind))

    def runs(self, workflow_id: str) -> list[ExecutionRecord]:
        """Newest first."""
        with self.app.db.connect() as conn:
            return executions.list_executions(conn, workflow_id, 1000, 0)[0]

    def last_result(self, workflow_id: str) -> Any:
        run = self.runs(workflow_id)[0]
        assert run.status == "completed", run.error
        return run.result


def builtin_registry(app: App, ids: tuple[str, ...], settings: dict[str, Any]) -> Registry:
    """The built-in workflows named, configured by `app.settings.workflows` and then
    `{id: {setting: value}}`."""
    tables = {key: dict(table) for key, table in app.settings.workflows.items()}
    for workflow_id, values in settings.items():
        tables.setdefault(workflow_id, {})["settings"] = values
    configured = app.settings.model_copy(update={"workflows": tables})
    loaded = load_registry(configured)
    assert not loaded.errors, loaded.errors
    registry = Registry()
    for workflow_id in ids:
        workflow = loaded.get(workflow_id)
        assert workflow is not None, workflow_id
        registry.register(workflow)
    return registry


@contextmanager
def workflow_vault(
    app: App, *ids: str, settings: dict[str, Any] | None = None
) -> Iterator[WorkflowVault]:
    """The engine inline, subscribed to the indexer's events, with these built-ins (all by
    default) and their settings."""
    registry = builtin_registry(app, ids or BUILTIN_IDS, settings or {})
    engine = engine_for(app, registry, background="inline")
    engine.start()
    try:
        yield WorkflowVault(app, engine)
    finally:
        engine.stop()
