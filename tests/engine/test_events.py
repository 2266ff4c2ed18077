"""File-event triggers: filtering by kind and glob, the engine's own writes not starting workflows
again (in one process and across two), and once end to end through the real watcher."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers import EngineFactory, WriteNotes, wait_for_async
from weaver.cache import executions
from weaver.edits import history
from weaver.engine import (
    FileTrigger,
    OnFile,
    Workflow,
    WorkflowContext,
    workflow,
)
from weaver.engine.context import trigger_detail, trigger_from_row
from weaver.runtime.app import App
from weaver.vault.events import NoteAdded, NoteDeleted, NoteModified, NoteMoved, VaultEvent
from weaver.vault.watcher import VaultWatcher


def recorder(
    workflow_id: str, *paths: str, kinds: tuple[str, ...] = ("add", "modify", "delete", "move")
) -> tuple[Workflow, list[tuple[str, ...]]]:
    """A workflow recording the events of each run."""
    runs: list[tuple[str, ...]] = []

    def record(ctx: WorkflowContext[Any]) -> list[str]:
        assert isinstance(ctx.trigger, FileTrigger)
        runs.append(tuple(f"{e.kind}:{e.path}" for e in ctx.trigger.events))
        return ctx.trigger.paths

    return workflow(id=workflow_id, triggers=[OnFile(*paths, kinds=kinds)])(record), runs


def file_runs(app: App) -> list[executions.ExecutionRecord]:
    with app.db.connect() as conn:
        records = executions.list_executions(conn, None, 1000, 0)[0]
    return [r for r in records if r.trigger_kind == "file"]


def test_events_start_the_workflows_whose_filters_match(
    app: App, make_engine: EngineFactory
) -> None:
    concepts, concept_runs = recorder("concepts", "concepts/**", kinds=("add", "modify"))
    inbox, inbox_runs = recorder("inbox", "inbox/*.md")
    engine = make_engine(concepts, inbox)
    batch: list[VaultEvent] = [
        NoteAdded("concepts/a.md"),
        NoteModified("concepts/deep/b.md"),
        NoteDeleted("concepts/c.md"),
        NoteAdded("inbox/x.md"),
        NoteAdded("inbox/sub/y.md"),
        NoteAdded("elsewhere.md"),
    ]
    queued = engine.handle_events(batch)
    assert len(queued) == 2  # one execution per workflow per batch
    assert concept_runs == [("add:concepts/a.md", "modify:concepts/deep/b.md")]
    assert inbox_runs == [("add:inbox/x.md",)]
    assert engine.handle_events([NoteAdded("elsewhere.md")]) == []
    records = file_runs(app)
    assert {r.workflow_id: r.status for r in records} == {
        "concepts": "completed",
        "inbox": "completed",
    }
    detail = next(r.trigger_detail for r in records if r.workflow_id == "inbox")
    assert detail == {"events": [{"kind": "add", "path": "inbox/x.md"}]}


def test_disabled_workflows_and_moves(app: App, make_engine: EngineFactory) -> None:
    archive, runs = recorder("archive", "archive/**", kinds=("move",))
    engine = make_engine(archive)
    engine.handle_events([NoteMoved(old_path="inbox/a.md", path="archive/a.md")])
    assert runs == [("move:archive/a.md",)]
    detail = file_runs(app)[0].trigger_detail
    assert detail == {"events": [{"kind": "move", "path": "archive/a.md", "oldPath": "inbox/a.md"}]}
    engine.registry.replace(dataclasses.replace(archive, enabled=False))
    assert engine.handle_events([NoteMoved(old_path="x.md", path="archive/x.md")]) == []


def test_a_workflow_writing_where_it_listens_does_not_loop(
    app: App, make_engine: EngineFactory, write_notes: WriteNotes
) -> None:
    runs: list[list[str]] = []

    @workflow(id="summariser", triggers=[OnFile("concepts/**")])
    def summarise(ctx: WorkflowContext[Any]) -> None:
        assert isinstance(ctx.trigger, FileTrigger)
        runs.append(ctx.trigger.paths)
        ctx.vault.write_text("concepts/summary.md", f"{len(runs)} runs\n")

    make_engine(summarise)
    write_notes({"concepts/a.md": "alpha"})
    app.indexer.reconcile()  # publishes NoteAdded(concepts/a.md): the workflow runs once...
    assert runs == [["concepts/a.md"]]
    app.indexer.reconcile()  # ...and its own summary.md, picked up now, starts nothing
    assert runs == [["concepts/a.md"]]
    assert (app.vault.root / "concepts/summary.md").read_text() == "1 runs\n"

    (app.vault.root / "concepts/summary.md").write_text("edited by hand\n")
    app.indexer.reconcile()  # a person's edit of the same note does start it
    assert runs == [["concepts/a.md"], ["concepts/summary.md"]]


def test_own_writes_are_recognised_across_processes(
    app: App, make_engine: EngineFactory, write_notes: WriteNotes
) -> None:
    """`weaver trigger` in a shell writes; the daemon, watching, must not react to it."""

    @workflow(id="writer")
    def writer(ctx: WorkflowContext[Any]) -> None:
        ctx.vault.write_text("inbox/new.md", "from a workflow")
        ctx.vault.delete("inbox/old.md")
        ctx.vault.move("inbox/moving.md", "inbox/moved.md")

    watcher_side, runs = recorder("inbox-watch", "inbox/**")
    write_notes({"inbox/old.md": "old", "inbox/moving.md": "moving"})
    app.indexer.reconcile()
    shell = make_engine(writer, background="queue", subscribe=False)
    make_engine(watcher_side)  # the daemon: subscribed to the bus
    runs.clear()

    assert shell.trigger("writer").status == "completed"
    report = app.indexer.reconcile()
    assert sorted(map(repr, report.events)) == sorted(
        map(
            repr,
            [
                NoteAdded("inbox/new.md"),
                NoteDeleted("inbox/old.md"),
                NoteMoved(old_path="inbox/moving.md", path="inbox/moved.md"),
            ],
        )
    )
    assert runs == []

    # A person recreating and deleting the note the engine deleted is theirs again.
    write_notes({"inbox/old.md": "back"})
    app.indexer.reconcile()
    (app.vault.root / "inbox/old.md").unlink()
    app.indexer.reconcile()
    assert runs == [("add:inbox/old.md",), ("delete:inbox/old.md",)]


@pytest.mark.slow
def test_real_file_change_through_the_watcher_starts_the_filtered_workflow(
    app: App, make_engine: EngineFactory, write_notes: WriteNotes, vault_dir: Path
) -> None:
    concepts, concept_runs = recorder("concepts", "concepts/**", kinds=("add", "modify"))
    inbox, inbox_runs = recorder("inbox", "inbox/**")
    make_engine(concepts, inbox, background="threads")

    def done(workflow_id: str, count: int) -> bool:
        return (
            sum(r.workflow_id == workflow_id and r.status == "completed" for r in file_runs(app))
            >= count
        )

    async def until(check: Callable[[], bool]) -> None:
        await wait_for_async(check, 5.0, "the workflow to run")

    async def scenario() -> None:
        watcher = VaultWatcher(app.indexer, debounce_ms=20)
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.run)
            await until(watcher.watching.is_set)
            write_notes({"concepts/graph.md": "# Graph"})
            await until(lambda: done("concepts", 1))
            write_notes({"inbox/idea.md": "an idea"})
            await until(lambda: done("inbox", 1))
            await anyio.sleep(0.3)  # proving a negative: a second run of either would come now
            tg.cancel_scope.cancel()

    anyio.run(scenario)
    assert concept_runs == [("add:concepts/graph.md",)]
    assert inbox_runs == [("add:inbox/idea.md",)]


def test_a_file_trigger_is_rebuilt_from_its_stored_row() -> None:
    """A queued or retried run gets the events it was triggered by, `initial` adds included."""
    trigger = FileTrigger(
        (
            NoteAdded("found.md", initial=True),
            NoteAdded("new.md"),
            NoteModified("edited.md"),
            NoteMoved(old_path="a.md", path="b.md"),
            NoteDeleted("gone.md"),
        )
    )
    stored = json.loads(json.dumps(trigger_detail(trigger)))
    assert trigger_from_row("file", stored) == trigger


def test_a_workflows_writes_are_in_the_notes_edit_history_and_can_be_undone(
    app: App, make_engine: EngineFactory, write_notes: WriteNotes
) -> None:
    @workflow(id="rewriter")
    def rewriter(ctx: WorkflowContext[Any]) -> None:
        ctx.vault.write_text("inbox/note.md", "rewritten by a workflow\n")
        ctx.vault.delete("inbox/old.md")

    write_notes({"inbox/note.md": "my words\n", "inbox/old.md": "old\n"})
    app.indexer.reconcile()
    engine = make_engine(rewriter, background="queue", subscribe=False)
    run = engine.trigger("rewriter")
    assert run.status == "completed"
    [edit] = history.list_edits(app, "inbox/note.md", limit=5, offset=0).edits
    assert edit.operation == "workflow rewriter" and edit.current and edit.restorable
    history.restore_edit(
        app, "inbox/note.md", edit.edit_id, expected_hash=None, sync=lambda _: True
    )
    assert (app.vault.root / "inbox/note.md").read_text() == "my words\n"
    [deleted] = history.list_edits(app, "inbox/old.md", limit=5, offset=0).edits
    history.restore_edit(
        app, "inbox/old.md", deleted.edit_id, expected_hash=None, sync=lambda _: True
    )
    assert (app.vault.root / "inbox/old.md").read_text() == "old\n"
