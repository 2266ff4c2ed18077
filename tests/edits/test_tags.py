"""Tags across the vault: rename on copies of the real corpora against a hand-made expectation,
dry runs, notes edited meanwhile, the journal finishing a run killed midway (kill -9), and
add/remove on given notes."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.corpora import require_corpora
from tests.helpers import WriteNotes
from weaver.cache import journal, read, tag_queries
from weaver.config import Settings
from weaver.edits import notes, tags
from weaver.edits.interrupted import recover_edits
from weaver.edits.notes import NoteEditError
from weaver.runtime import cache_sync
from weaver.runtime.app import App, open_app

pytestmark = pytest.mark.both_backends


def sync_for(app: App) -> notes.CacheSync:
    def sync(expected: Mapping[str, str | None]) -> bool:
        return cache_sync.sync_cache(app, expected, holds_writer=False)

    return sync


def tagged(app: App, key: str) -> set[str]:
    with read.read_snapshot(app.db) as conn:
        return {f.path for f in read.search_tag(conn, key, 1000).files}


def corpus_copy(tmp_path: Path, name: str) -> Path:
    source = require_corpora() / name
    target = tmp_path / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".weaver"))
    return target


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*.md")
        if ".weaver" not in p.parts
    }


def changed_files(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return {path for path in before if before[path] != after.get(path)}


# -- the corpora ------------------------------------------------------------------------------

TASKS_DEMO_TODO = {
    "Manual Testing/Styling of Queries.md": [(79, "#todo/strategic", "#Work/strategic")],
    "Manual Testing/Frontmatter/Placeholder examples to capture in tests and docs.md": [
        (38, "#todo #health", "#Work #health")
    ],
    "Manual Testing/Seeing the Query as HTML/HTML from Query.md": [
        (54, "#todo #health", "#Work #health")
    ],
}


def test_rename_on_tasks_demo_matches_the_hand_made_expectation(tmp_path: Path) -> None:
    root = corpus_copy(tmp_path, "tasks-demo")
    app = open_app(Settings(vault=root))
    try:
        app.indexer.reconcile()
        before = snapshot(root)
        dry = tags.rename_tag(app, "#TODO", "Work", dry_run=True, sync=sync_for(app))
        assert snapshot(root) == before
        planned = {(c.path, c.line) for c in dry.changes}
        assert planned == {(p, line) for p, items in TASKS_DEMO_TODO.items() for line, *_ in items}
        for change in dry.changes:
            ((_, old, new),) = TASKS_DEMO_TODO[change.path]
            assert old in change.before and new in change.after
        done = tags.rename_tag(app, "todo", "Work", dry_run=False, sync=sync_for(app))
        after = snapshot(root)
        assert changed_files(before, after) == set(TASKS_DEMO_TODO)
        styling = after["Manual Testing/Styling of Queries.md"].decode()
        assert "`#todo/strategic`" in styling  # inline code stays
        assert "description red #Work/strategic" in styling
        assert {o.status for o in done.outcomes} == {"written"} and done.cache_synced
        assert tagged(app, "todo") == set() and tagged(app, "work") == set(TASKS_DEMO_TODO)
        comma = tags.rename_tag(
            app, "value-1-of-2-on-one-line", "v1", dry_run=False, sync=sync_for(app)
        )
        assert [c.after for c in comma.changes] == ["tags: v1, value-2-of-2-on-one-line"]
    finally:
        app.close()


def test_rename_on_kepano_nested_and_frontmatter_lists(tmp_path: Path) -> None:
    """`genres` is its own tag: `music/genres` is not below it and stays. The templates whose
    frontmatter holds `{{date}}` (not valid YAML) carry no tags for Obsidian, nor here."""
    root = corpus_copy(tmp_path, "kepano-obsidian")
    app = open_app(Settings(vault=root))
    try:
        app.indexer.reconcile()
        before = snapshot(root)
        tags.rename_tag(app, "games", "Play", dry_run=False, sync=sync_for(app))
        tags.rename_tag(app, "GENRES", "Genre", dry_run=False, sync=sync_for(app))
        journal_run = tags.rename_tag(app, "journal", "Diary", dry_run=False, sync=sync_for(app))
        categories = tags.rename_tag(
            app, "categories", "category", dry_run=True, sync=sync_for(app)
        )
        after = snapshot(root)
    finally:
        app.close()
    genre = "Templates/Video Game Genre Template.md"
    genres = {"Templates/Genre Template.md", "References/Sci-fi.md"}
    assert changed_files(before, after) == {genre} | genres
    assert after[genre] == before[genre].replace(b"  - games/genres", b"  - Play/genres")
    for path in genres:
        assert after[path] == before[path].replace(b"  - genres\n", b"  - Genre\n")
    assert journal_run.changes == ()
    assert {c.path for c in categories.changes} == {
        str(p.relative_to(root)) for p in (root / "Categories").glob("*.md")
    }
    assert {(c.before, c.after) for c in categories.changes} == {("  - categories", "  - category")}


# -- safety -------------------------------------------------------------------------------------


def test_a_note_edited_between_plan_and_write_is_skipped(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_notes({"a.md": "#proj a\n", "b.md": "#proj b\n"})
    app.indexer.reconcile()
    real_plan = tags._plan

    def plan_then_edit(*args: object) -> object:
        found = real_plan(*args)  # type: ignore[arg-type]
        (root / "b.md").write_text("#proj b, edited in Obsidian\n")
        return found

    monkeypatch.setattr(tags, "_plan", plan_then_edit)
    result = tags.rename_tag(app, "proj", "work", dry_run=False, sync=sync_for(app))
    assert {o.path: o.status for o in result.outcomes} == {"a.md": "written", "b.md": "skipped"}
    assert (root / "b.md").read_text() == "#proj b, edited in Obsidian\n"
    with app.db.connect() as conn:
        run = journal.get_run(conn, result.journal_id or 0)
    assert run is not None and run.finished is not None
    assert {n.path: n.status for n in run.notes} == {"a.md": "written", "b.md": "skipped"}


def test_bad_names_are_refused(app: App) -> None:
    for old, new in (("proj", "two words"), ("1984", "x"), ("proj", "#proj")):
        with pytest.raises(NoteEditError):
            tags.rename_tag(app, old, new, dry_run=True, sync=sync_for(app))


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from weaver.config import Settings
    from weaver.edits import tags
    from weaver.runtime.app import open_app

    app = open_app(Settings(vault=sys.argv[1], database_url=sys.argv[2]))
    written = []

    def on_written(path):
        written.append(path)
        if len(written) == 3:
            os.kill(os.getpid(), signal.SIGKILL)

    tags.rename_tag(app, "proj", "work", dry_run=False, sync=lambda e: True, on_written=on_written)
    """
)


def test_a_rename_killed_midway_is_finished_at_the_next_start(
    settings: Settings, write_notes: WriteNotes
) -> None:
    files: dict[str, str | bytes] = {f"n{i:02d}.md": f"note {i} #proj\n" for i in range(60)}
    root = write_notes(files)
    app = open_app(settings)
    app.indexer.reconcile()
    app.close()
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), settings.db_url], capture_output=True, timeout=60
    )
    assert child.returncode == -9, child.stderr.decode()
    before = {p for p in files if "#work" in (root / p).read_text()}
    # Killed after its third write; the writes in flight beside it may have landed too.
    assert 3 <= len(before) < len(files) - 1
    (root / "n59.md").write_text("note 59 #proj, edited after the crash\n")
    app = open_app(settings)
    try:
        with app.db.connect() as conn:
            assert len(journal.unfinished_runs(conn)) == 1
        (recovered,) = recover_edits(app, sync_for(app))
        details = {o.path: (o.status, o.detail) for o in recovered.outcomes}
        for path in files:
            if path == "n59.md":
                assert details[path][0] == "skipped"
            elif path in before:
                assert details[path] == ("written", "written before the interruption")
            else:
                assert details[path] == ("written", "written at recovery")
        assert (root / "n59.md").read_text() == "note 59 #proj, edited after the crash\n"
        assert all(
            (root / p).read_text() == f"note {p[1:3].lstrip('0') or 0} #work\n"
            for p in files
            if p != "n59.md"
        )
        assert tagged(app, "work") == set(files) - {"n59.md"}
        assert recover_edits(app, sync_for(app)) == []  # settled once
    finally:
        app.close()


# -- tags on given notes ----------------------------------------------------------------------


def test_add_and_remove_tags_on_given_notes(app: App, write_notes: WriteNotes) -> None:
    root = write_notes({"a.md": "---\ntags: [x]  # mine\n---\nA\n", "b.md": "B #inline\n"})
    app.indexer.reconcile()
    results = tags.change_note_tags(
        app, ["a.md", "b.md", "nope.md"], add=["#y", "X"], sync=sync_for(app)
    )
    assert [r.error is None for r in results] == [True, True, False]
    assert (root / "a.md").read_text() == "---\ntags: [x, y] # mine\n---\nA\n"
    assert (root / "b.md").read_text() == "---\ntags:\n  - y\n  - X\n---\nB #inline\n"
    tags.change_note_tags(app, ["a.md", "b.md"], remove=["x"], sync=sync_for(app))
    assert (root / "b.md").read_text() == "---\ntags:\n  - y\n---\nB #inline\n"
    assert tagged(app, "y") == {"a.md", "b.md"} and tagged(app, "x") == set()


def test_list_tags_counts_notes(app: App, write_notes: WriteNotes) -> None:
    write_notes({"a.md": "#proj/x #Other\n", "b.md": "#proj\n"})
    app.indexer.reconcile()
    counts = {t.tag: (t.notes, t.own) for t in tags.list_tags(app)}
    assert counts["proj"] == (2, 1) and counts["proj/x"] == (1, 1) and counts["Other"] == (1, 1)


def test_finished_runs_are_kept_for_a_while_then_dropped(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    with app.db.begin() as conn:
        first = journal.begin_run(conn, "rename_tag", {}, [journal.PlannedNote("a.md", "x", "y")])
        journal.finish_run(conn, first, [("a.md", "written", None)])
    monkeypatch.setattr(journal, "now_ms", lambda: 10**15)  # far in the future
    with app.db.begin() as conn:
        second = journal.begin_run(conn, "rename_tag", {}, [])
        journal.finish_run(conn, second, [])
        assert journal.get_run(conn, first) is None and journal.get_run(conn, second) is not None


def test_a_tags_string_is_a_rename_candidate_whatever_its_case(
    app: App, write_notes: WriteNotes
) -> None:
    """The comma form of frontmatter `tags` (which the index cannot read) is found by LIKE,
    ignoring case as SQLite's does: ILIKE on PostgreSQL."""
    write_notes({"a.md": "---\ntags: Proj, other\n---\nbody\n", "b.md": "---\ntags: x\n---\n"})
    app.indexer.reconcile()
    with app.db.connect() as conn:
        assert tag_queries.retag_candidates(conn, "proj") == ["a.md"]
