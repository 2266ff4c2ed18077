"""A person's notes are never lost to Weaver's writes: one writer per note across threads and
processes, answers that tell the truth under a full cache, bounded edits, and changes to many
notes finished after a kill -9."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import tracemalloc
from collections.abc import Mapping
from pathlib import Path

import pytest
from sqlalchemy import event
from structlog.testing import capture_logs

from tests.helpers import WriteNotes
from weaver.cache import journal, read
from weaver.config import Settings
from weaver.edits import gate, notes, patches, steps, tags
from weaver.edits.interrupted import recover_edits
from weaver.edits.notes import NoteChangedError, NoteEditError
from weaver.markdown.parser import parse_note
from weaver.runtime import cache_sync
from weaver.runtime.app import App, open_app


def sync_for(app: App) -> notes.CacheSync:
    def sync(expected: Mapping[str, str | None]) -> bool:
        return cache_sync.sync_cache(app, expected, holds_writer=True)

    return sync


def append(text: str) -> patches.Transform:
    return patches.insert_transform("append", text)


# -- one writer per note ----------------------------------------------------------------------


@pytest.mark.both_backends
def test_same_hash_edits_from_twenty_threads_accept_exactly_one(
    app: App, write_notes: WriteNotes
) -> None:
    root = write_notes({"n.md": "# Note\n"})
    app.indexer.reconcile()
    start = steps.sha256((root / "n.md").read_bytes())
    barrier = threading.Barrier(20)
    accepted: list[int] = []
    refused: list[int] = []

    def edit(i: int) -> None:
        barrier.wait()
        try:
            patches.patch_note(
                app, "n.md", append(f"edit {i}\n"), expected_hash=start, sync=sync_for(app)
            )
        except NoteChangedError:
            refused.append(i)
        else:
            accepted.append(i)

    threads = [threading.Thread(target=edit, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(accepted) == 1 and len(refused) == 19
    assert (root / "n.md").read_text() == f"# Note\nedit {accepted[0]}\n"


WRITER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from weaver.config import Settings
    from weaver.edits import notes, patches
    from weaver.runtime.app import open_app

    vault, go, me, expected = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    app = open_app(Settings(vault=vault))
    while not go.exists():
        time.sleep(0.001)
    try:
        patches.patch_note(
            app, "n.md", patches.insert_transform("append", f"edit {me}\\n"),
            expected_hash=expected, sync=lambda expected: True,
        )
    except notes.NoteChangedError:
        print("refused")
    else:
        print("accepted")
    """
)


@pytest.mark.slow
def test_same_hash_edits_from_separate_processes_accept_exactly_one(
    app: App, write_notes: WriteNotes, tmp_path: Path
) -> None:
    root = write_notes({"n.md": "# Note\n"})
    app.indexer.reconcile()
    start = steps.sha256((root / "n.md").read_bytes())
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER_SCRIPT, str(root), str(go), str(i), start],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(6)
    ]
    go.touch()
    answers = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert sorted(answers) == ["accepted"] + ["refused"] * 5
    assert (root / "n.md").read_text().count("edit ") == 1


def test_a_save_made_while_weaver_writes_is_never_overwritten(
    app: App, write_notes: WriteNotes
) -> None:
    """Another program saves between Weaver's read and its rename: Weaver's write is refused."""
    root = write_notes({"n.md": "# Note\n"})
    original = steps.unchanged_check

    def check_after_a_save(vault: object, expected: Mapping[str, str]) -> object:
        (root / "n.md").write_text("# Note\nsaved in the editor\n")
        return original(vault, expected)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(steps, "unchanged_check", check_after_a_save)
        with pytest.raises(NoteChangedError):
            patches.patch_note(
                app, "n.md", append("mine\n"), expected_hash=None, sync=sync_for(app)
            )
    assert (root / "n.md").read_text() == "# Note\nsaved in the editor\n"


# -- answers that tell the truth --------------------------------------------------------------


def fill_the_cache(app: App) -> None:
    """Every connection of the cache from now on finds its disk full (SQLite's own error)."""

    @event.listens_for(app.db, "connect")
    def full(dbapi_connection: object, _record: object) -> None:
        cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
        pages = cursor.execute("PRAGMA page_count").fetchone()[0]
        cursor.execute(f"PRAGMA max_page_count = {pages}")
        cursor.close()

    app.db.dispose()


@pytest.mark.sqlite_only
def test_a_write_while_the_cache_disk_is_full_is_answered_as_applied_with_a_warning(
    app: App, write_notes: WriteNotes
) -> None:
    root = write_notes({"n.md": "# Note\n" + "filler line\n" * 2000})
    app.indexer.reconcile()
    fill_the_cache(app)
    write_gate = gate.WriteGate(30)
    with gate.gated(write_gate):
        result = patches.patch_note(
            app, "n.md", append("x" * 200_000 + "\n"), expected_hash=None, sync=sync_for(app)
        )
    assert result.changed and not result.cache_synced
    assert (root / "n.md").read_bytes().endswith(b"x" * 200_000 + b"\n")
    assert result.content_hash == steps.sha256((root / "n.md").read_bytes())
    assert any("the cache could not be updated" in w for w in write_gate.warnings)


def test_a_call_cancelled_before_its_write_writes_nothing(
    app: App, write_notes: WriteNotes
) -> None:
    root = write_notes({"n.md": "# Note\n"})
    write_gate = gate.WriteGate(1)
    assert write_gate.cancel()
    with (
        gate.gated(write_gate),
        pytest.raises(gate.WriteCancelledError, match="nothing was written"),
    ):
        patches.patch_note(app, "n.md", append("late\n"), expected_hash=None, sync=sync_for(app))
    assert (root / "n.md").read_text() == "# Note\n"


def test_a_write_that_began_cannot_be_cancelled(app: App, write_notes: WriteNotes) -> None:
    root = write_notes({"n.md": "# Note\n"})
    write_gate = gate.WriteGate(1)
    cancelled: list[bool] = []

    def sync(expected: Mapping[str, str | None]) -> bool:
        cancelled.append(write_gate.cancel())  # the deadline passes during the cache update
        return True

    with gate.gated(write_gate):
        result = patches.patch_note(app, "n.md", append("kept\n"), expected_hash=None, sync=sync)
    assert cancelled == [False] and result.changed
    assert (root / "n.md").read_text() == "# Note\nkept\n"


# -- bounded edits ----------------------------------------------------------------------------


def test_a_replacement_that_would_grow_a_note_past_the_limit_is_refused_early(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(patches, "MAX_NOTE_BYTES", 4 << 20)
    original = "word " * 4000 + "\n"  # 20 KB
    root = write_notes({"n.md": original})
    change = patches.Replace(find="o", replacement="o" * 10_000)
    tracemalloc.start()
    try:
        with pytest.raises(NoteEditError, match="bigger than a note may be"):
            patches.patch_note(
                app,
                "n.md",
                patches.replace_transform(change),
                expected_hash=None,
                sync=sync_for(app),
            )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (root / "n.md").read_text() == original
    assert peak < 3 * (4 << 20) * 4  # within a few times the bound, never the 40 MB it asked for


def test_no_write_makes_a_note_bigger_than_the_limit(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(steps, "MAX_NOTE_BYTES", 1000)
    root = write_notes({"n.md": "# Note\n"})
    with pytest.raises(NoteEditError, match="2,008 bytes, over the 1,000 bytes"):
        patches.patch_note(app, "n.md", append("y" * 2000), expected_hash=None, sync=sync_for(app))
    assert (root / "n.md").read_text() == "# Note\n"


# -- changes to many notes, finished after a crash --------------------------------------------


MOVE_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from weaver.config import Settings
    from weaver.edits import notes, steps
    from weaver.runtime.app import open_app
    from weaver.vault.writer import VaultWriter

    vault, point, after = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    app = open_app(Settings(vault=vault))
    app.indexer.reconcile()
    written = 0
    if point == "rename":
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        VaultWriter.move = die
    else:
        original = steps.guarded_write
        def counting(*args, **kwargs):
            global written
            if written == after:
                os.kill(os.getpid(), signal.SIGKILL)
            written += 1
            return original(*args, **kwargs)
        steps.guarded_write = counting
    notes.move_note(app, "Topic.md", "Archive/Topic Renamed.md", lambda expected: True)
    """
)


def links_to(vault: Path, target: str) -> tuple[int, int]:
    """(links resolving to `target`'s name, links still naming the old note) across the vault."""
    good = old = 0
    for file in vault.rglob("*.md"):
        if ".weaver" in file.parts:
            continue
        parsed = parse_note(file.relative_to(vault).as_posix(), file.read_text())
        for link in parsed.links:
            good += link.target.endswith("Topic Renamed")
            old += link.target == "Topic"
    return good, old


@pytest.mark.slow
@pytest.mark.sqlite_only
@pytest.mark.parametrize(("point", "after"), [("rename", 0), ("rewrite", 0), ("rewrite", 150)])
def test_a_move_killed_midway_is_finished_at_the_next_start(
    vault_dir: Path, write_notes: WriteNotes, point: str, after: int
) -> None:
    files = {f"n{i:03d}.md": "See [[Topic]] and [[Topic|the topic]].\n" for i in range(300)}
    root = write_notes({**files, "Topic.md": "# Topic\nSelf: [[Topic]]\n"})
    died = subprocess.run(
        [sys.executable, "-c", MOVE_SCRIPT, str(root), point, str(after)], timeout=120
    )
    assert died.returncode == -signal.SIGKILL
    app = open_app(Settings(vault=root))
    try:
        with capture_logs() as logs:
            recovered = recover_edits(app, sync_for(app))
        assert [r.operation for r in recovered] == ["move_file"]
        [said] = [e for e in logs if e["event"] == "interrupted edit settled"]
        assert said["operation"] == "move_file" and said["written"] == 302
        assert not (root / "Topic.md").exists()
        assert (root / "Archive/Topic Renamed.md").is_file()
        assert links_to(root, "Archive/Topic Renamed.md") == (601, 0)
        statuses = {o.status for o in recovered[0].outcomes}
        assert statuses == {"written"}
        with app.db.connect() as conn:
            assert journal.unfinished_runs(conn) == []
            detail = read.get_file(conn, "Archive/Topic Renamed.md")
        assert detail is not None
    finally:
        app.close()


@pytest.mark.both_backends
def test_add_tags_on_many_notes_is_one_journalled_run_finished_after_a_crash(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_notes({f"n{i}.md": f"# Note {i}\n" for i in range(5)})
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
    with pytest.raises(KeyboardInterrupt):
        tags.change_note_tags(app, [f"n{i}.md" for i in range(5)], add=["done"], sync=sync_for(app))
    monkeypatch.setattr(steps, "guarded_write", original)
    tagged = [p for p in sorted(root.glob("n*.md")) if "done" in p.read_text()]
    assert len(tagged) == 2
    [recovered] = recover_edits(app, sync_for(app))
    assert recovered.operation == "add_tags"
    for note in root.glob("n*.md"):
        assert "done" in parse_note(note.name, note.read_text()).tags


def test_a_single_edit_interrupted_before_its_write_is_not_applied_later(
    app: App, write_notes: WriteNotes
) -> None:
    root = write_notes({"n.md": "# Note\n"})
    old = steps.sha256(b"# Note\n")
    with app.db.begin() as conn:  # as a process killed just before its rename leaves it
        journal.begin_run(
            conn,
            "edit_file",
            {},
            [journal.PlannedNote("n.md", old, "f" * 64, old_data=b"# Note\n")],
        )
    [recovered] = recover_edits(app, sync_for(app))
    assert recovered.outcomes[0].status == "skipped"
    assert "not applied" in (recovered.outcomes[0].detail or "")
    assert (root / "n.md").read_text() == "# Note\n"


def test_a_note_edited_by_the_person_meanwhile_is_never_overwritten_by_recovery(
    app: App, write_notes: WriteNotes
) -> None:
    root = write_notes({"n.md": "# Note\n"})
    old = steps.sha256(b"# Note\n")
    planned = journal.PlannedNote("n.md", old, steps.sha256(b"planned\n"), new_data=b"planned\n")
    with app.db.begin() as conn:
        journal.begin_run(conn, "rename_tag", {"from": "a", "to": "b"}, [planned])
    (root / "n.md").write_text("# Note\nmy own words\n")
    [recovered] = recover_edits(app, sync_for(app))
    assert recovered.outcomes[0].status == "skipped"
    assert (root / "n.md").read_text() == "# Note\nmy own words\n"
