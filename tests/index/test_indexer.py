"""The indexer: incremental passes, renames, link re-resolution and bad input."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session
from structlog.testing import capture_logs

from tests.helpers import WriteNotes
from weaver.cache import write
from weaver.cache.models import Link, Note, Tag
from weaver.cli import main
from weaver.config import Settings
from weaver.index import indexer as indexer_module
from weaver.index import workers as parse_workers
from weaver.markdown.parser import PARSER_VERSION
from weaver.runtime.app import App, open_app
from weaver.runtime.locks import writer_lock_for
from weaver.vault.events import NoteAdded, NoteDeleted, NoteModified, NoteMoved, VaultEvent

pytestmark = pytest.mark.both_backends


def links_of(app: App, source: str) -> dict[str, str | None]:
    with app.db.connect() as conn:
        rows = conn.execute(select(Link.target, Link.target_path).where(Link.source_path == source))
        return {row.target: row.target_path for row in rows}


def note(app: App, path: str) -> Note | None:
    with Session(app.db) as session:
        return session.get(Note, path)


def note_paths(app: App) -> list[str]:
    with app.db.connect() as conn:
        return sorted(conn.execute(select(Note.path)).scalars())


def bump_mtime(path: Path) -> None:
    later = time.time_ns() + 5_000_000_000
    os.utime(path, ns=(later, later))


def test_first_index_stores_metadata_tags_and_links(app: App, write_notes: WriteNotes) -> None:
    write_notes(
        {
            "Home.md": "---\ntitle: Welcome\ntype: hub\nstatus: active\ntags: [Project/Alpha]\n"
            "aliases: Start\n---\nSee [[Topic]] and [[Missing]] #inline\n",
            "notes/Topic.md": "# Topic heading\nBack to [[Home|home]].\n",
        }
    )
    report = app.indexer.reconcile()
    assert (report.added, report.updated, report.removed, report.errors) == (2, 0, 0, 0)
    home = note(app, "Home.md")
    assert home is not None
    assert (home.title, home.type, home.status, home.aliases) == (
        "Welcome",
        "hub",
        "active",
        ["Start"],
    )
    assert home.folder == ""
    topic = note(app, "notes/Topic.md")
    assert topic is not None
    assert (topic.title, topic.heading, topic.folder) == ("Topic", "Topic heading", "notes")
    assert links_of(app, "Home.md") == {"Topic": "notes/Topic.md", "Missing": None}
    with app.db.connect() as conn:
        tags = set(conn.execute(select(Tag.key, Tag.tag).where(Tag.note_path == "Home.md")))
    assert tags == {("project/alpha", "Project/Alpha"), ("inline", "inline")}


def test_second_pass_reads_nothing_when_nothing_changed(app: App, write_notes: WriteNotes) -> None:
    write_notes({f"n{i}.md": f"note {i} [[n{i + 1}]]" for i in range(20)})
    app.indexer.reconcile()
    report = app.indexer.reconcile()
    assert (report.added, report.updated, report.unchanged) == (0, 0, 20)
    assert report.events == []


def test_touched_but_identical_note_is_not_reparsed(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"a.md": "same"})
    app.indexer.reconcile()
    bump_mtime(vault_dir / "a.md")
    report = app.indexer.reconcile()
    assert (report.updated, report.unchanged) == (0, 1)
    stored = note(app, "a.md")
    assert stored is not None
    assert stored.mtime_ns == (vault_dir / "a.md").stat().st_mtime_ns  # not re-hashed next time


def test_notes_parsed_by_an_older_parser_are_read_again_once(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade that parses differently re-reads every note on the next start, without
    events, so no note keeps tags found by old rules until it happens to change."""
    write_notes({"Colours.md": '<span style="color: #abc">red</span> #real\n'})
    app.indexer.reconcile()
    with app.db.begin() as conn:  # as a cache written by the parser before tags around HTML
        conn.execute(insert(Tag).values(note_path="Colours.md", key="abc", tag="abc"))
        write.set_state(conn, indexer_module.PARSED_BY_KEY, PARSER_VERSION - 1)
    events: list[VaultEvent] = []
    app.bus.subscribe(events.extend)
    report = app.indexer.reconcile()
    with app.db.connect() as conn:
        tags = conn.execute(select(Tag.key).where(Tag.note_path == "Colours.md")).scalars()
        assert sorted(tags) == ["real"]
    assert not report.changed and events == []
    reparsed: list[object] = []
    monkeypatch.setattr(parse_workers, "build_record", lambda *a: reparsed.append(a))
    app.indexer.reconcile()  # the version is kept: the next start reads nothing
    assert reparsed == []


def test_a_first_index_finds_notes_that_later_passes_add(app: App, write_notes: WriteNotes) -> None:
    """The notes of a first index were in the vault already: their adds say so (`initial`),
    and only adds after it are new notes."""
    write_notes({"a.md": "a", "b.md": "b"})
    first = app.indexer.reconcile()
    assert sorted(first.events, key=str) == [
        NoteAdded("a.md", initial=True),
        NoteAdded("b.md", initial=True),
    ]
    write_notes({"c.md": "c"})
    assert app.indexer.reconcile().events == [NoteAdded("c.md")]
    write_notes({"d.md": "d"})
    assert app.indexer.apply_paths(["d.md"]).events == [NoteAdded("d.md")]


def test_a_first_index_resumed_after_an_interruption_still_finds_its_notes(
    app: App, write_notes: WriteNotes, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first index stopped midway (Ctrl-C) is finished by the next start: the notes it had
    not reached yet were not created that day either, while a note edited meanwhile is an
    edit and one written after the resumed pass is new."""
    write_notes({f"n{i}.md": f"note {i}" for i in range(6)})
    monkeypatch.setattr(indexer_module, "WRITE_BATCH", 2)
    monkeypatch.setattr(parse_workers, "CHUNK", 2)
    real_write_chunk = indexer_module._write_chunk
    batches = 0

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        nonlocal batches
        batches += 1
        if batches == 2:
            raise KeyboardInterrupt
        return real_write_chunk(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(indexer_module, "_write_chunk", interrupted)
        with pytest.raises(KeyboardInterrupt):
            app.indexer.reconcile()
    assert note_paths(app) == ["n0.md", "n1.md"]
    (vault_dir / "n0.md").write_text("note 0, edited")
    bump_mtime(vault_dir / "n0.md")
    resumed = app.indexer.reconcile()
    assert sorted(resumed.events, key=str) == [
        *(NoteAdded(f"n{i}.md", initial=True) for i in range(2, 6)),
        NoteModified("n0.md"),
    ]
    write_notes({"new.md": "new"})
    assert app.indexer.reconcile().events == [NoteAdded("new.md")]


def test_edit_updates_and_keeps_created(app: App, write_notes: WriteNotes, vault_dir: Path) -> None:
    write_notes({"a.md": "#one"})
    app.indexer.reconcile()
    before = note(app, "a.md")
    (vault_dir / "a.md").write_text("#two [[b]]")
    bump_mtime(vault_dir / "a.md")
    report = app.indexer.reconcile()
    after = note(app, "a.md")
    assert report.events == [NoteModified("a.md")]
    assert before is not None and after is not None
    assert after.created == before.created
    assert after.content_hash != before.content_hash
    assert links_of(app, "a.md") == {"b": None}


def test_new_note_resolves_links_that_were_broken_and_deletion_breaks_them(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"a.md": "[[Later]] and ![[Later#part]]", "b/c.md": "[[later.md]]"})
    app.indexer.reconcile()
    assert links_of(app, "a.md") == {"Later": None}
    write_notes({"x/Later.md": "here now"})
    report = app.indexer.reconcile()
    assert report.relinked == 3
    assert links_of(app, "a.md") == {"Later": "x/Later.md"}
    assert links_of(app, "b/c.md") == {"later.md": "x/Later.md"}
    (vault_dir / "x" / "Later.md").unlink()
    app.indexer.reconcile()
    assert links_of(app, "a.md") == {"Later": None}


def test_closer_note_takes_over_resolution_when_it_appears(
    app: App, write_notes: WriteNotes
) -> None:
    write_notes({"deep/er/Dup.md": "far", "proj/a.md": "[[Dup]]"})
    app.indexer.reconcile()
    assert links_of(app, "proj/a.md") == {"Dup": "deep/er/Dup.md"}
    write_notes({"proj/Dup.md": "near"})
    app.indexer.reconcile()
    assert links_of(app, "proj/a.md") == {"Dup": "proj/Dup.md"}


def test_rename_is_a_move_event_and_relinks(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"old/Name.md": "content", "a.md": "[[old/Name]] [[New]]"})
    app.indexer.reconcile()
    (vault_dir / "old" / "Name.md").rename(vault_dir / "New.md")
    events: list[VaultEvent] = []
    app.bus.subscribe(events.extend)
    report = app.indexer.reconcile()
    assert events == [NoteMoved(old_path="old/Name.md", path="New.md")]
    assert report.moved == 1
    assert note_paths(app) == ["New.md", "a.md"]
    assert links_of(app, "a.md") == {"old/Name": None, "New": "New.md"}


def test_deleted_note_takes_its_tags_and_links(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"a.md": "#t [[b]]", "b.md": "x"})
    app.indexer.reconcile()
    (vault_dir / "a.md").unlink()
    report = app.indexer.reconcile()
    assert report.events == [NoteDeleted("a.md")]
    with app.db.connect() as conn:
        assert conn.execute(select(Tag)).first() is None
        assert conn.execute(select(Link)).first() is None


def test_apply_paths_handles_a_folder_moved_as_a_whole(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"proj/a.md": "A", "proj/sub/b.md": "B", "index.md": "[[proj/a]] [[b]]"})
    app.indexer.reconcile()
    (vault_dir / "proj").rename(vault_dir / "archive")
    report = app.indexer.apply_paths(["proj", "archive"])
    assert sorted(e.path for e in report.events if isinstance(e, NoteMoved)) == [
        "archive/a.md",
        "archive/sub/b.md",
    ]
    assert note_paths(app) == ["archive/a.md", "archive/sub/b.md", "index.md"]
    assert links_of(app, "index.md") == {"proj/a": None, "b": "archive/sub/b.md"}


def test_attachments_resolve_embeds(app: App, write_notes: WriteNotes, vault_dir: Path) -> None:
    write_notes({"a.md": "![[pic.png|100]] [[doc.pdf]]", "media/pic.png": b"\x89PNG"})
    app.indexer.reconcile()
    assert links_of(app, "a.md") == {"pic.png": "media/pic.png", "doc.pdf": None}
    (vault_dir / "media" / "pic.png").unlink()
    app.indexer.apply_paths(["media/pic.png"])
    assert links_of(app, "a.md") == {"pic.png": None, "doc.pdf": None}


BAD_INPUTS: dict[str, str | bytes] = {
    "bad-yaml.md": "---\ncreated: {{date}}\ntags: [a\n---\nBody [[Target]] #still-read\n",
    "latin1.md": "caf\xe9 [[x]]".encode("latin-1"),
    "bom.md": "\ufeff---\ntitle: With BOM\n---\n[[Target]]".encode(),
    "empty.md": "",
    "list-frontmatter.md": "---\n- a\n- b\n---\ntext",
    "weird name (1) – ü & #.md": "[[Target]]",
    "Target.md": "t",
}


def test_bad_input_is_indexed_with_its_error_and_never_stops_the_run(
    app: App, write_notes: WriteNotes
) -> None:
    write_notes(BAD_INPUTS)
    report = app.indexer.reconcile()
    assert report.added == len(BAD_INPUTS)
    assert report.errors == 3
    bad_yaml = note(app, "bad-yaml.md")
    assert bad_yaml is not None and bad_yaml.error and "line" in bad_yaml.error
    assert bad_yaml.frontmatter == {}
    assert links_of(app, "bad-yaml.md") == {"Target": "Target.md"}
    latin1 = note(app, "latin1.md")
    assert latin1 is not None and latin1.error and "UTF-8" in latin1.error
    assert latin1.size == len("café [[x]]")
    bom = note(app, "bom.md")
    assert bom is not None and (bom.title, bom.error) == ("With BOM", None)
    listed = note(app, "list-frontmatter.md")
    assert listed is not None and listed.error and listed.frontmatter == {}
    assert links_of(app, "weird name (1) – ü & #.md") == {"Target": "Target.md"}


def test_huge_note_is_indexed(app: App, write_notes: WriteNotes) -> None:
    # 20 MB of prose with a link and a tag every hundred lines: this is about size (reading,
    # hashing, full-text indexing, memory). That the parser stays linear on dense links, code
    # and unclosed openers is test_parser's test_large_note_completes.
    prose = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod.\n" * 99
    block = prose + "See [[Target]], then #tag and [[Missing]].\n"
    write_notes({"huge.md": block * (20_000_000 // len(block)), "Target.md": "t"})
    report = app.indexer.reconcile()
    assert report.added == 2
    huge = note(app, "huge.md")
    assert huge is not None and huge.size >= 19_000_000 and huge.tasks_open == 0
    assert links_of(app, "huge.md") == {"Target": "Target.md", "Missing": None}
    with app.db.connect() as conn:
        count = select(func.count()).select_from(Link).where(Link.source_path == "huge.md")
        assert conn.execute(count).scalar_one() == 2 * (20_000_000 // len(block))


def test_file_deleted_while_being_read_is_removed_quietly(
    app: App, write_notes: WriteNotes, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes({"a.md": "a", "b.md": "b"})
    real_read = app.vault.read_bytes

    def vanish_b(path: str) -> bytes:
        if path == "b.md":
            (vault_dir / "b.md").unlink()
        return real_read(path)

    monkeypatch.setattr(app.vault, "read_bytes", vanish_b)
    report = app.indexer.reconcile()
    assert report.events == [NoteAdded("a.md", initial=True)]
    assert note_paths(app) == ["a.md"]


def test_full_reindex_reparses_everything(app: App, write_notes: WriteNotes) -> None:
    write_notes({"a.md": "a", "b.md": "b"})
    app.indexer.reconcile()
    report = app.indexer.reconcile(full=True)
    assert (report.updated, report.unchanged) == (0, 2)


def test_cli_index_leaves_the_cache_to_the_process_that_keeps_it(
    settings: Settings, write_notes: WriteNotes, capsys: pytest.CaptureFixture[str]
) -> None:
    write_notes({"a.md": "a"})
    open_app(settings).close()  # the cache its writer made (none waits for a missing one)
    held = writer_lock_for(settings)  # the advisory lock on PostgreSQL
    try:
        assert held.try_acquire()
        assert main(["--vault", str(settings.vault), "--db", settings.db_url, "index"]) == 0
        shown = capsys.readouterr().out
        assert f"kept fresh by pid {os.getpid()}: 0 notes" in shown or (
            f"kept fresh by {socket.gethostname()}:{os.getpid()} since " in shown
        )
        assert (
            main(["--vault", str(settings.vault), "--db", settings.db_url, "index", "--full"]) == 2
        )
        assert "cannot re-read every note now" in capsys.readouterr().err
    finally:
        held.close()
    assert main(["--vault", str(settings.vault), "--db", settings.db_url, "index", "--json"]) == 0
    assert '"added": 1' in capsys.readouterr().out


class Watching:
    """A PassObserver that remembers what it was told."""

    def __init__(self) -> None:
        self.read: list[tuple[int, int]] = []
        self.failed: list[tuple[str, str]] = []

    def notes_read(self, done: int, total: int) -> None:
        self.read.append((done, total))

    def note_failed(self, path: str, error: str) -> None:
        self.failed.append((path, error))


def test_an_observed_pass_reports_per_chunk_and_each_failure_once(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parse_workers, "CHUNK", 2)
    write_notes({f"n{i}.md": f"note {i}" for i in range(4)} | {"bad.md": "---\na: [\n---\n"})
    watching = Watching()
    with capture_logs() as logs:
        report = app.indexer.reconcile(observer=watching)
    assert report.errors == 1
    assert watching.read == [(0, 5), (2, 5), (4, 5), (5, 5)]  # a call per chunk, not per note
    [(path, error)] = watching.failed
    assert path == "bad.md" and error.startswith("invalid YAML frontmatter at line 3")
    # The observer shows failures and the summary to the person waiting: no log lines for them.
    assert not [e for e in logs if e["log_level"] in ("info", "warning")]
    assert app.indexer.reconcile(observer=Watching()).unchanged == 5  # nothing to read: no calls


def test_watcher_batches_reuse_the_paths_they_know_until_another_process_writes(
    app: App, settings: Settings, write_notes: WriteNotes, vault_dir: Path
) -> None:
    # A watcher batch resolves links against the indexer's own list of every path, kept from
    # pass to pass; a pass by another indexer (another process) must make it read them again.
    write_notes({"a.md": "[[New]] [[Old]]", "Old.md": "o"})
    app.indexer.reconcile()
    other = open_app(settings)
    try:
        write_notes({"New.md": "n"})
        (vault_dir / "Old.md").unlink()
        other.indexer.apply_paths(["New.md", "Old.md"])
    finally:
        other.close()
    write_notes({"b.md": "[[New]] [[Old]]"})
    app.indexer.apply_paths(["b.md"])
    assert links_of(app, "b.md") == {"New": "New.md", "Old": None}
    assert links_of(app, "a.md") == {"New": "New.md", "Old": None}
    # And its own passes keep the list in step: a file it added, then removed.
    write_notes({"c.md": "c"})
    app.indexer.apply_paths(["c.md"])
    write_notes({"d.md": "[[c]]"})
    app.indexer.apply_paths(["d.md"])
    assert links_of(app, "d.md") == {"c": "c.md"}
    (vault_dir / "c.md").unlink()
    app.indexer.apply_paths(["c.md"])
    assert links_of(app, "d.md") == {"c": None}
    write_notes({"e.md": "[[c]]"})
    app.indexer.apply_paths(["e.md"])
    assert links_of(app, "e.md") == {"c": None}


def test_a_vanished_folder_takes_only_what_was_below_it(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"f/a.md": "a", "f/sub/b.md": "b", "f-other/c.md": "c", "f.md": "[[a]]"})
    app.indexer.reconcile()
    for name in ("f/sub/b.md", "f/a.md"):
        (vault_dir / name).unlink()
    (vault_dir / "f" / "sub").rmdir()
    (vault_dir / "f").rmdir()
    report = app.indexer.apply_paths(["f"])
    assert report.removed == 2
    assert note_paths(app) == ["f-other/c.md", "f.md"]
    assert links_of(app, "f.md") == {"a": None}
