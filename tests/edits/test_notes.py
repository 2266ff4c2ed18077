"""Writing notes: composing text, create/update with expected hashes and concurrent edits, crash
safety, move_note rewriting links in every form, delete to .trash, and keeping the cache in step."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import WriteNotes
from weaver.cache import read
from weaver.edits import history, notes
from weaver.edits.notes import NoteChangedError, NoteEditError, NoteWriteError, compose_note
from weaver.errors import InvalidPathError, NoteNotFoundError, VaultError
from weaver.runtime import cache_sync
from weaver.runtime.app import App
from weaver.runtime.locks import writer_lock_for


def sync_for(app: App) -> notes.CacheSync:
    def sync(expected: Mapping[str, str | None]) -> bool:
        return cache_sync.sync_cache(app, expected, holds_writer=False)

    return sync


def cached_hash(app: App, path: str) -> str | None:
    with read.read_snapshot(app.db) as conn:
        detail = read.get_file(conn, path)
    return None if detail is None else detail.content_hash


def temp_files(root: Path) -> list[Path]:
    return list(root.rglob("*.weaver-tmp"))


# -- composing text ---------------------------------------------------------------------------


CURRENT = "---\n# keep this comment\ntitle: Plan\ntags: [a]\n---\n# Plan\nOld body #inline\n"


def test_content_replaces_the_body_and_keeps_the_block_byte_for_byte() -> None:
    assert compose_note(CURRENT, "New body\n") == (
        "---\n# keep this comment\ntitle: Plan\ntags: [a]\n---\nNew body\n"
    )
    assert compose_note(CURRENT, "---\nx: 1\n---\nAll new\n") == "---\nx: 1\n---\nAll new\n"
    assert compose_note(None, "Just text") == "Just text"


def test_frontmatter_is_merged_null_deletes_and_tags_are_set() -> None:
    text = compose_note(
        CURRENT, frontmatter={"status": "draft", "title": None}, tags=["#b", "B", "c/d"]
    )
    assert text == "---\ntags:\n- b\n- c/d\nstatus: draft\n---\n# Plan\nOld body #inline\n"
    assert compose_note(text, frontmatter={"status": None}, tags=[]) == "# Plan\nOld body #inline\n"
    created = compose_note(None, "Body", {"links": ["[[A]]"], "n": 2}, ["x"])
    assert created == "---\nlinks:\n- '[[A]]'\nn: 2\ntags:\n- x\n---\nBody"


def test_tags_key_keeps_its_spelling_and_invalid_tags_are_refused() -> None:
    assert compose_note("---\nTags: [a]\n---\nx", tags=["b"]) == "---\nTags:\n- b\n---\nx"
    for bad in ("two words", "1984", "a,b", ""):
        with pytest.raises(NoteEditError, match="not a valid tag"):
            compose_note(None, "x", tags=[bad])


def test_broken_yaml_is_kept_unless_a_patch_needs_it() -> None:
    broken = "---\ndate: {{date}}\n---\nbody\n"
    assert compose_note(broken, "new\n") == "---\ndate: {{date}}\n---\nnew\n"
    with pytest.raises(NoteEditError, match="not valid YAML"):
        compose_note(broken, frontmatter={"x": 1})
    with pytest.raises(NoteEditError, match="not a mapping"):
        compose_note("---\n- a\n---\nx", tags=["t"])


# -- create and update --------------------------------------------------------------------------


def test_create_writes_atomically_and_updates_the_cache(app: App, vault_dir: Path) -> None:
    result = notes.create_note(
        app, "ideas/deep/Idea.md", "# Idea\n", {"status": "new"}, ["x"], sync_for(app)
    )
    assert result.path == "ideas/deep/Idea.md" and result.changed and result.cache_synced
    data = (vault_dir / "ideas" / "deep" / "Idea.md").read_bytes()
    assert notes.sha256(data) == result.content_hash == cached_hash(app, result.path)
    assert data == b"---\nstatus: new\ntags:\n- x\n---\n# Idea\n"


def test_create_never_overwrites(app: App, write_notes: WriteNotes, vault_dir: Path) -> None:
    write_notes({"Taken.md": "mine"})
    with pytest.raises(VaultError, match="already exists"):
        notes.create_note(app, "Taken.md", "theirs", None, None, sync_for(app))
    assert (vault_dir / "Taken.md").read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize("path", ["../out.md", "/abs.md", ".obsidian/x.md", ".trash/x.md", "x.txt"])
def test_writes_stay_inside_the_vault_notes(app: App, path: str) -> None:
    with pytest.raises(InvalidPathError):
        notes.create_note(app, path, "x", None, None, sync_for(app))


def test_update_with_the_right_hash(app: App, write_notes: WriteNotes, vault_dir: Path) -> None:
    write_notes({"n.md": CURRENT})
    app.indexer.reconcile()
    before = cached_hash(app, "n.md")
    result = notes.update_note(app, "n.md", tags=["z"], expected_hash=before, sync=sync_for(app))
    assert result.changed and cached_hash(app, "n.md") == result.content_hash != before
    assert "- z" in (vault_dir / "n.md").read_text(encoding="utf-8")


def test_update_refuses_a_stale_hash_and_writes_nothing(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"n.md": "v1"})
    app.indexer.reconcile()
    seen = cached_hash(app, "n.md")
    (vault_dir / "n.md").write_text("v2 from the editor", encoding="utf-8")
    with pytest.raises(NoteChangedError, match="nothing was written"):
        notes.update_note(app, "n.md", content="v3", expected_hash=seen, sync=sync_for(app))
    assert (vault_dir / "n.md").read_text(encoding="utf-8") == "v2 from the editor"


def test_an_edit_saved_during_the_update_is_never_lost(
    app: App, write_notes: WriteNotes, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes({"n.md": "v1"})
    original = notes.compose_note

    def compose_while_the_editor_saves(*args: Any, **kwargs: Any) -> str:
        (vault_dir / "n.md").write_text("saved in Obsidian meanwhile", encoding="utf-8")
        return original(*args, **kwargs)

    monkeypatch.setattr(notes, "compose_note", compose_while_the_editor_saves)
    with pytest.raises(NoteChangedError):
        notes.update_note(app, "n.md", content="from the model", sync=sync_for(app))
    assert (vault_dir / "n.md").read_text(encoding="utf-8") == "saved in Obsidian meanwhile"
    assert temp_files(vault_dir) == []


def test_update_without_a_change_writes_nothing_and_keeps_a_bom(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"bom.md": "\ufeff---\na: 1\n---\nbody"})
    mtime = (vault_dir / "bom.md").stat().st_mtime_ns
    same = notes.update_note(app, "bom.md", frontmatter={}, sync=sync_for(app))
    assert not same.changed and (vault_dir / "bom.md").stat().st_mtime_ns == mtime
    notes.update_note(app, "bom.md", content="new", sync=sync_for(app))
    assert (vault_dir / "bom.md").read_bytes() == b"\xef\xbb\xbf---\na: 1\n---\nnew"


def test_update_errors(app: App, write_notes: WriteNotes) -> None:
    write_notes({"n.md": "x", "latin.md": "caf\xe9".encode("latin-1")})
    with pytest.raises(NoteEditError, match="nothing to change"):
        notes.update_note(app, "n.md", sync=sync_for(app))
    with pytest.raises(NoteNotFoundError):
        notes.update_note(app, "gone.md", content="x", sync=sync_for(app))
    with pytest.raises(VaultError, match="not valid UTF-8"):
        notes.update_note(app, "latin.md", content="x", sync=sync_for(app))


@pytest.mark.parametrize("failing", ["fsync", "rename"])
def test_a_crash_mid_write_leaves_the_old_file_intact(
    app: App,
    write_notes: WriteNotes,
    vault_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    failing: str,
) -> None:
    write_notes({"n.md": "the old text"})

    def crash(*_args: object) -> None:
        raise OSError(5, "Input/output error")

    if failing == "fsync":
        monkeypatch.setattr(os, "fsync", crash)
    else:
        monkeypatch.setattr(Path, "replace", crash)
    with pytest.raises(NoteWriteError, match="Cannot write file"):
        notes.update_note(app, "n.md", content="the new text", sync=sync_for(app))
    assert (vault_dir / "n.md").read_text(encoding="utf-8") == "the old text"
    assert temp_files(vault_dir) == []


# -- move ----------------------------------------------------------------------------------------


MOVE_VAULT: dict[str, str | bytes] = {
    "Notes/Old Name.md": (
        "# Old\nSee [[Helper]], [local](./Helper.md), [[#Intro]] and [[Old Name#Intro]].\n"
    ),
    "Notes/Helper.md": "# The helper beside it\n",
    "Lib/Helper.md": "# Another helper, with a shorter path\n",
    "Sibling.md": "# Sibling at the root\n",
    "Notes/Rel.md": "[r](./Old%20Name.md) [r2](../Notes/Old%20Name.md#Intro)\n",
    "Linker.md": (
        '---\nup: "[[Old Name]]"\nrelated: ["[[Old Name|x]]", "[[Other]]"]\n---\n'
        "Plain [[Old Name]], alias [[Old Name|the old one]], heading [[Old Name#Intro]],\n"
        "block [[Old Name#^blk]], embed ![[Old Name]], path [[Notes/Old Name]],\n"
        "ext [[Old Name.md]], typed [[rel::Old Name]], unrelated [[Other]] and [[Sibling]].\n"
        "author:: [[Old Name]]\n"
        "md [t](Notes/Old%20Name.md#Intro), angle [t](<Notes/Old Name.md>), web [w](https://x.y/Old%20Name.md)\n"
        "`[[Old Name]]` in code, and\n```\n[[Old Name]]\n```\n"
    ),
    "Crlf.md": "line one\r\n[[Old Name]]\r\n[[Old Name|x]] end\r\n",
    "Other.md": "nothing here",
}

LINKER_AFTER = (
    '---\nup: "[[New Name]]"\nrelated: ["[[New Name|x]]", "[[Other]]"]\n---\n'
    "Plain [[New Name]], alias [[New Name|the old one]], heading [[New Name#Intro]],\n"
    "block [[New Name#^blk]], embed ![[New Name]], path [[New Name]],\n"
    "ext [[New Name.md]], typed [[rel::New Name]], unrelated [[Other]] and [[Sibling]].\n"
    "author:: [[New Name]]\n"
    "md [t](New%20Name.md#Intro), angle [t](<New Name.md>), web [w](https://x.y/Old%20Name.md)\n"
    "`[[Old Name]]` in code, and\n```\n[[Old Name]]\n```\n"
)


@pytest.fixture
def move_vault(app: App, write_notes: WriteNotes) -> App:
    write_notes(MOVE_VAULT)
    app.indexer.reconcile()
    return app


def test_move_rewrites_every_form_of_link(move_vault: App, vault_dir: Path) -> None:
    result = notes.move_note(
        move_vault, "Notes/Old Name.md", "archive/New Name.md", sync_for(move_vault)
    )
    assert (result.path, result.old_path, result.failed) == (
        "archive/New Name.md",
        "Notes/Old Name.md",
        (),
    )
    assert result.rewritten == {
        "Linker.md": 13,
        "Crlf.md": 2,
        "Notes/Rel.md": 2,
        "archive/New Name.md": 3,
    }
    assert not (vault_dir / "Notes" / "Old Name.md").exists()
    assert (vault_dir / "Linker.md").read_text(encoding="utf-8") == LINKER_AFTER
    assert (
        vault_dir / "Crlf.md"
    ).read_bytes() == b"line one\r\n[[New Name]]\r\n[[New Name|x]] end\r\n"
    assert (vault_dir / "Notes" / "Rel.md").read_text(encoding="utf-8") == (
        "[r](../archive/New%20Name.md) [r2](../archive/New%20Name.md#Intro)\n"
    )
    # Its own links keep their targets: the same-folder Helper and the relative path.
    assert (vault_dir / "archive" / "New Name.md").read_text(encoding="utf-8") == (
        "# Old\nSee [[Notes/Helper]], [local](../Notes/Helper.md), [[#Intro]] and "
        "[[New Name#Intro]].\n"
    )


BOARD = (
    '{\n\t"nodes":[\n'
    '\t\t{"id":"a1","type":"file","file":"Notes/Old Name.md","subpath":"#Intro",'
    '"x":0,"y":0,"width":400,"height":300,"color":"2"},\n'
    '\t\t{"id":"b2","type":"file","file":"Other.md","x":500,"y":0,"width":400,"height":300},\n'
    '\t\t{"id":"c3","type":"text","text":"[[Old Name]] stays text","x":0,"y":400,'
    '"width":250,"height":60}\n'
    '\t],\n\t"edges":[]\n}'
)


def test_a_move_retargets_the_canvas_cards_that_show_the_note(
    move_vault: App, vault_dir: Path, write_notes: WriteNotes
) -> None:
    write_notes({"Boards/Plan.canvas": BOARD, "Boards/Broken.canvas": '{"nodes": [{"id": 1}]}'})
    move_vault.indexer.reconcile()
    broken = (vault_dir / "Boards" / "Broken.canvas").read_bytes()
    result = notes.move_note(
        move_vault, "Notes/Old Name.md", "archive/New Name.md", sync_for(move_vault)
    )
    assert result.rewritten["Boards/Plan.canvas"] == 2 and result.failed == ()
    # The file card and the text card's link changed; the other fields, the other cards and
    # the layout are kept.
    assert (vault_dir / "Boards" / "Plan.canvas").read_text(encoding="utf-8") == BOARD.replace(
        '"file":"Notes/Old Name.md"', '"file":"archive/New Name.md"'
    ).replace("[[Old Name]] stays text", "[[New Name]] stays text")
    assert (vault_dir / "Boards" / "Broken.canvas").read_bytes() == broken  # never rewritten
    # Journalled with the move, as every note it rewrote: undone by restore_edit.
    board_edits = history.list_edits(move_vault, "Boards/Plan.canvas", limit=5, offset=0)
    assert [e.operation for e in board_edits.edits] == ["move_file"]


def test_after_a_move_the_cache_shows_every_link_resolved(move_vault: App) -> None:
    notes.move_note(move_vault, "Notes/Old Name.md", "archive/New Name.md", sync_for(move_vault))
    with read.read_snapshot(move_vault.db) as conn:
        detail = read.get_file(conn, "archive/New Name.md")
        stats = read.get_stats(conn)
        assert read.get_file(conn, "Notes/Old Name.md") is None
    assert detail is not None
    assert detail.incoming == ["Crlf.md", "Linker.md", "Notes/Rel.md", "archive/New Name.md"]
    assert [t.target for t in detail.outgoing] == ["Notes/Helper.md", "archive/New Name.md"]
    assert stats.broken_links == 0


def test_move_keeps_other_links_from_being_captured(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"Other/Topic.md": "t", "Z.md": "[[Topic]]", "misc/x.md": "x"})
    app.indexer.reconcile()
    result = notes.move_note(app, "misc/x.md", "Topic.md", sync_for(app))
    assert result.rewritten == {"Z.md": 1}
    assert (vault_dir / "Z.md").read_text(encoding="utf-8") == "[[Other/Topic]]"


def test_move_into_a_folder_and_refusals(move_vault: App, vault_dir: Path) -> None:
    result = notes.move_note(move_vault, "Other.md", "Notes/", sync_for(move_vault))
    assert result.path == "Notes/Other.md"
    assert "[[Other]]" in (vault_dir / "Linker.md").read_text(encoding="utf-8")  # still unique
    with pytest.raises(VaultError, match="already exists"):
        notes.move_note(move_vault, "Sibling.md", "Notes/Helper.md", sync_for(move_vault))
    with pytest.raises(NoteEditError, match="already at that path"):
        notes.move_note(move_vault, "Sibling.md", "Sibling.md", sync_for(move_vault))
    with pytest.raises(NoteNotFoundError):
        notes.move_note(move_vault, "nope.md", "x.md", sync_for(move_vault))
    assert (vault_dir / "Sibling.md").read_text(encoding="utf-8") == "# Sibling at the root\n"


def test_a_move_preview_is_the_move_it_foresees_and_writes_nothing(
    move_vault: App, vault_dir: Path
) -> None:
    before = {p: p.read_bytes() for p in vault_dir.rglob("*.md")}
    preview = notes.preview_move(move_vault, "Notes/Old Name.md", "archive/New Name.md")
    assert {p: p.read_bytes() for p in vault_dir.rglob("*.md")} == before
    assert (preview.path, preview.new_path) == ("Notes/Old Name.md", "archive/New Name.md")
    moved = notes.move_note(
        move_vault, "Notes/Old Name.md", "archive/New Name.md", sync_for(move_vault)
    )
    # The moved note's links to itself are its own business: the others are what is asked.
    assert preview.rewrites == {k: v for k, v in moved.rewritten.items() if k != moved.path}
    with pytest.raises(VaultError, match="already exists"):
        notes.preview_move(move_vault, "Sibling.md", "Notes/Helper.md")
    with pytest.raises(NoteNotFoundError):
        notes.preview_move(move_vault, "nope.md", "x.md")


def test_a_delete_preview_names_the_notes_whose_links_will_break(move_vault: App) -> None:
    preview = notes.preview_delete(move_vault, "Notes/Old Name.md")
    assert preview == notes.DeletePreview(
        "Notes/Old Name.md", ("Crlf.md", "Linker.md", "Notes/Rel.md")
    )
    with pytest.raises(NoteNotFoundError):
        notes.preview_delete(move_vault, "nope.md")


# -- delete --------------------------------------------------------------------------------------


def test_delete_moves_to_trash_without_overwriting(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes({"a/Note.md": "first", "b.md": "[[Note]]"})
    app.indexer.reconcile()
    first = notes.delete_note(app, "a/Note.md", sync_for(app))
    assert first.trash_path == ".trash/a/Note.md" and first.cache_synced
    write_notes({"a/Note.md": "second"})
    second = notes.delete_note(app, "a/Note.md", sync_for(app))
    assert second.trash_path == ".trash/a/Note 1.md"
    assert (vault_dir / ".trash" / "a" / "Note.md").read_text(encoding="utf-8") == "first"
    assert (vault_dir / ".trash" / "a" / "Note 1.md").read_text(encoding="utf-8") == "second"
    with pytest.raises(NoteNotFoundError):
        notes.delete_note(app, "a/Note.md", sync_for(app))
    assert sorted(p.name for p in (vault_dir / ".trash" / "a").iterdir()) == [
        "Note 1.md",
        "Note.md",
    ]
    with read.read_snapshot(app.db) as conn:
        assert read.get_file(conn, "a/Note.md") is None
        detail = read.get_file(conn, "b.md")
    assert detail is not None and detail.outgoing[0].broken


# -- keeping the cache in step ------------------------------------------------------------------


def test_sync_waits_for_the_process_that_writes_the_cache(
    app: App, write_notes: WriteNotes
) -> None:
    write_notes({"n.md": "x"})
    other_writer = writer_lock_for(app.settings)  # the advisory lock on PostgreSQL
    assert other_writer.try_acquire()
    try:
        expected = {"n.md": notes.sha256(b"x")}
        assert not cache_sync.sync_cache(app, expected, holds_writer=False, timeout=0.2)
        timer = threading.Timer(0.2, app.indexer.apply_paths, [["n.md"]])  # its watcher
        timer.start()
        # True: the other writer's index was seen, before this wait's own timeout.
        assert cache_sync.sync_cache(app, expected, holds_writer=False, timeout=10)
        timer.join()
    finally:
        other_writer.close()
