"""The audit log as the edits core keeps it: each write attributed to whoever the edge says is
writing, in the transactions that journal and finish it, so that a row never claims a write
that did not land; a run a crash interrupted settled by recovery under its first client; a
workflow's writes under the workflow; old rows pruned by `audit_retention_days`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import pytest

from tests.helpers import EngineFactory, WriteNotes
from weaver.cache import audit_log, journal
from weaver.edits import steps, tags
from weaver.edits.attribution import LOCAL, Actor, acting_as, current_actor
from weaver.edits.audit import AuditQueryError, parse_since, read_audit
from weaver.edits.interrupted import recover_edits
from weaver.edits.notes import NoteChangedError
from weaver.engine import WorkflowContext, workflow
from weaver.runtime import cache_sync
from weaver.runtime.app import App

PHONE = Actor("oauth", "c-123", "Phone assistant", "edit_file")
DAY_MS = 86_400_000


def sync_for(app: App) -> steps.CacheSync:
    def sync(expected: Mapping[str, str | None]) -> bool:
        return cache_sync.sync_cache(app, expected, holds_writer=True)

    return sync


def append(app: App, path: str, text: str) -> steps.Change:
    return steps.write_note(
        app,
        path,
        lambda old: (old or b"") + text.encode(),
        operation="edit_file",
        arguments={},
        sync=sync_for(app),
    )


def outcomes(app: App, **filters: Any) -> list[tuple[str, str, str, int]]:
    page = read_audit(app.db, **filters)
    return [(e.client_name, e.path, e.outcome, e.edit_id) for e in page.items]


def test_a_write_is_audited_under_its_client_with_its_edit_id(
    app: App, write_notes: WriteNotes
) -> None:
    write_notes({"n.md": "# Note\n"})
    with acting_as(PHONE):
        change = append(app, "n.md", "from the phone\n")
    local = append(app, "n.md", "by hand\n")
    [mine] = read_audit(app.db, client="c-123").items
    assert (mine.caller_kind, mine.client_id, mine.client_name) == ("oauth", "c-123", PHONE.name)
    assert (mine.tool, mine.path, mine.outcome) == ("edit_file", "n.md", "written")
    assert mine.edit_id == change.journal_id
    # Outside any edge the writer is the local user, and the tool the journal's operation.
    [other] = read_audit(app.db, client="local").items
    assert (other.edit_id, other.tool) == (local.journal_id, "edit_file")
    assert current_actor() == LOCAL


@pytest.mark.both_backends
def test_a_write_that_failed_leaves_no_row_claiming_it(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_notes({"n.md": "# Note\n"})
    original = steps.unchanged_check

    def check_after_a_save(vault: object, expected: Mapping[str, str]) -> object:
        (root / "n.md").write_text("# Note\nsaved in the editor\n")
        return original(vault, expected)  # type: ignore[arg-type]

    monkeypatch.setattr(steps, "unchanged_check", check_after_a_save)
    with acting_as(PHONE), pytest.raises(NoteChangedError):
        append(app, "n.md", "mine\n")
    [row] = read_audit(app.db).items
    assert row.outcome == "skipped" and "File changed on disk" in (row.detail or "")

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise steps.NoteWriteError("n.md", PermissionError(13, "Permission denied"))

    monkeypatch.setattr(steps, "unchanged_check", original)
    monkeypatch.setattr(steps, "guarded_write", refuse)
    with acting_as(PHONE), pytest.raises(steps.NoteWriteError):
        append(app, "n.md", "mine\n")
    assert [o[2] for o in outcomes(app)] == ["failed", "skipped"]
    assert read_audit(app.db, client=PHONE.name).total == 2
    assert "mine" not in (root / "n.md").read_text()


@pytest.mark.both_backends
def test_a_run_interrupted_midway_is_settled_by_recovery_under_its_client(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_notes({f"n{i}.md": f"# Note {i}\n" for i in range(4)})
    app.indexer.reconcile()
    writes = 0
    original = steps.guarded_write

    def crash_after_two(*args: object, **kwargs: object) -> None:
        nonlocal writes
        if writes == 2:
            raise KeyboardInterrupt  # the process dies here: nothing after it runs
        writes += 1
        original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(steps, "guarded_write", crash_after_two)
    bulk = Actor("oauth", "c-123", "Phone assistant", "add_tags")
    paths = [f"n{i}.md" for i in range(4)]
    with acting_as(bulk), pytest.raises(KeyboardInterrupt):
        tags.change_note_tags(app, paths, add=["done"], sync=sync_for(app))
    monkeypatch.setattr(steps, "guarded_write", original)
    # Until the run is settled, no row says its notes were written.
    assert {o[2] for o in outcomes(app)} == {"pending"}
    recover_edits(app, sync_for(app))
    found = read_audit(app.db)
    assert sorted((e.path, e.outcome, e.tool) for e in found.items) == [
        (path, "written", "add_tags") for path in paths
    ]
    assert {e.client_name for e in found.items} == {"Phone assistant"}
    assert all("done" in (root / path).read_text() for path in paths)


def test_a_workflows_writes_are_audited_under_the_workflow(
    app: App, make_engine: EngineFactory, write_notes: WriteNotes
) -> None:
    write_notes({"n.md": "# Note\n"})

    @workflow(id="summariser")
    def summariser(ctx: WorkflowContext[Any]) -> None:
        ctx.vault.write_text("Summary.md", "# Summary\n")

    with acting_as(Actor("cli", "cli", "cli", "weaver trigger")):  # who asked is not who wrote
        assert make_engine(summariser).trigger("summariser").status == "completed"
    [row] = read_audit(app.db, note="Summary.md").items
    assert (row.caller_kind, row.client_id, row.tool) == (
        "workflow",
        "summariser",
        "workflow summariser",
    )
    assert row.outcome == "written"


def test_old_rows_are_pruned_by_the_retention_setting(app: App, make_engine: EngineFactory) -> None:
    now = journal.now_ms()
    with app.db.begin() as conn:
        audit_log.record_run(conn, 1, PHONE, ["old.md"], now - 91 * DAY_MS)
        audit_log.record_run(conn, 2, PHONE, ["recent.md"], now - 89 * DAY_MS)
    make_engine().prune(now)  # the engine prunes at its start and hourly: 90 days by default
    assert [e.path for e in read_audit(app.db).items] == ["recent.md"]
    make_engine(audit_retention_days=0).prune(now + 365 * DAY_MS)  # 0 keeps everything
    assert read_audit(app.db).total == 1


@pytest.mark.both_backends
def test_filters_by_client_note_folder_and_age(app: App) -> None:
    now = journal.now_ms()
    cli = Actor("cli", "cli", "cli", "weaver undo")
    with app.db.begin() as conn:
        audit_log.record_run(conn, 1, PHONE, ["a/one.md", "b/two.md"], now - 3 * DAY_MS)
        audit_log.record_run(conn, 2, cli, ["a/one.md"], now - 60_000)
    assert read_audit(app.db, client="Phone assistant").total == 2
    assert read_audit(app.db, client="c-123").total == 2
    assert [e.client_id for e in read_audit(app.db, note="a/one.md").items] == ["cli", "c-123"]
    assert read_audit(app.db, note="a/").total == 2
    assert read_audit(app.db, note="a").total == 0  # a path, not a prefix
    assert [e.edit_id for e in read_audit(app.db, since="1d").items] == [2]
    paged = read_audit(app.db, limit=2, offset=0)
    assert paged.total == 3 and paged.has_more and len(paged.items) == 2
    assert not read_audit(app.db, limit=2, offset=2).has_more


def test_since_takes_an_age_or_a_date_and_names_what_it_cannot_read() -> None:
    now = 10 * DAY_MS
    assert parse_since("7d", now) == 3 * DAY_MS
    assert parse_since("12h", now) == now - 12 * 3_600_000
    assert (
        parse_since("2026-11-01") == int(dt.datetime(2026, 11, 1, tzinfo=dt.UTC).timestamp()) * 1000
    )
    with pytest.raises(AuditQueryError, match=r"since: cannot read 'yesterday'; expected an age"):
        parse_since("yesterday")
