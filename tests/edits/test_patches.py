"""Edits inside one note through the write core: hash checks, CRLF and BOM kept, binary and
oversized notes refused, a save in the editor meanwhile never lost, the cache in step."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from tests.helpers import WriteNotes
from weaver.cache import read
from weaver.edits import notes, patches
from weaver.edits.notes import NoteChangedError, NoteEditError
from weaver.errors import NoteDecodeError, NoteTooLargeError
from weaver.runtime import cache_sync
from weaver.runtime.app import App
from weaver.vault import fs


def sync_for(app: App) -> notes.CacheSync:
    def sync(expected: Mapping[str, str | None]) -> bool:
        return cache_sync.sync_cache(app, expected, holds_writer=False)

    return sync


def edit(app: App, path: str, transform: patches.Transform, **kw: str) -> patches.Patched:
    return patches.patch_note(
        app, path, transform, expected_hash=kw.get("expected"), sync=sync_for(app)
    )


def test_append_keeps_crlf_and_bom_and_updates_the_cache(app: App, write_notes: WriteNotes) -> None:
    root = write_notes({"w.md": "\ufeff# Win\r\nline\r\n"})
    app.indexer.reconcile()
    result = edit(app, "w.md", patches.insert_transform("append", "more #new"))
    assert (root / "w.md").read_bytes() == "\ufeff# Win\r\nline\r\nmore #new\r\n".encode()
    assert result.changed and result.diff.preview == ("+more #new",)
    with read.read_snapshot(app.db) as conn:
        detail = read.get_file(conn, "w.md")
    assert detail is not None and detail.content_hash == result.content_hash
    assert "new" in detail.summary.tags


def test_expected_hash_and_a_missing_target(app: App, write_notes: WriteNotes) -> None:
    write_notes({"n.md": "# A\ntext\n"})
    with pytest.raises(NoteChangedError, match="File changed on disk"):
        edit(app, "n.md", patches.insert_transform("append", "x"), expected="0" * 64)
    with pytest.raises(NoteEditError, match=r"no heading path 'B'.*# A \(n.md\)"):
        edit(app, "n.md", patches.insert_transform("replace", "x", heading="B"))
    with pytest.raises(NoteEditError, match="exactly one target"):
        patches.insert_transform("after", "x")
    with pytest.raises(NoteEditError, match="acts on the whole note"):
        patches.insert_transform("append", "x", heading="A")
    with pytest.raises(NoteEditError, match="end of a heading's section: a block has none"):
        patches.insert_transform("end_of_section", "x", block="^b")
    with pytest.raises(NoteEditError, match=r"unknown position 'middle'.*end_of_section"):
        patches.insert_transform("middle", "x", heading="A")


def test_zero_matches_is_an_error_unless_allowed(app: App, write_notes: WriteNotes) -> None:
    root = write_notes({"n.md": "---\nk: cat\n---\ncat\n"})
    with pytest.raises(NoteEditError, match="'dog' is not in the note's body"):
        edit(app, "n.md", patches.replace_transform(patches.Replace("dog", "x")))
    allowed = edit(
        app, "n.md", patches.replace_transform(patches.Replace("dog", "x", allow_no_match=True))
    )
    assert allowed.matches == 0 and not allowed.changed
    done = edit(app, "n.md", patches.replace_transform(patches.Replace("cat", "dog")))
    assert done.matches == 1 and (root / "n.md").read_text() == "---\nk: cat\n---\ndog\n"


def test_binary_and_oversized_notes_are_refused(
    app: App, write_notes: WriteNotes, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes({"bin.md": b"\x00\xff\xfe binary", "big.md": "x" * 2000})
    with pytest.raises(NoteDecodeError):
        edit(app, "bin.md", patches.insert_transform("append", "x"))
    monkeypatch.setattr(fs, "MAX_NOTE_BYTES", 1000)
    with pytest.raises(NoteTooLargeError):
        edit(app, "big.md", patches.insert_transform("append", "x"))


def test_a_save_in_the_editor_during_the_edit_is_not_lost(
    app: App, write_notes: WriteNotes
) -> None:
    root = write_notes({"n.md": "body\n"})

    def transform(text: str) -> tuple[str, int]:
        (root / "n.md").write_text("saved in Obsidian meanwhile\n")
        return text + "appended\n", 1

    with pytest.raises(NoteChangedError):
        edit(app, "n.md", transform)
    assert (root / "n.md").read_text() == "saved in Obsidian meanwhile\n"


def test_frontmatter_and_tags_transforms(app: App, write_notes: WriteNotes) -> None:
    root = write_notes({"n.md": "---\n# mine\nstatus: draft\n---\nbody\n"})
    change = patches.FrontmatterChange(set_={"status": "done"}, merge={"tags": ["a"]})
    edit(app, "n.md", patches.frontmatter_transform(change))
    assert (root / "n.md").read_text() == "---\n# mine\nstatus: done\ntags:\n  - a\n---\nbody\n"
    with pytest.raises(NoteEditError, match="nothing to change"):
        patches.frontmatter_transform(patches.FrontmatterChange())
    with pytest.raises(NoteEditError, match="not a valid tag"):
        patches.tags_transform(add=["two words"])
    root.joinpath("bad.md").write_text("---\na: [\n---\nx\n")
    with pytest.raises(NoteEditError, match="not valid YAML at line"):
        edit(app, "bad.md", patches.frontmatter_transform(patches.FrontmatterChange({"b": 1})))
