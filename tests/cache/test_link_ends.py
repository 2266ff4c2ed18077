"""Where a note's links lead, by target as written: a note, an attachment, nothing yet, the
note itself; and the answer follows the vault when the missing note appears."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import indexed_app
from weaver.cache import read
from weaver.cache.link_ends import LinkEnd, link_ends_of

FILES: dict[str, str | bytes] = {
    "notes/Home.md": (
        "---\nrelated: '[[Topic|the topic]]'\n---\n"
        "See [[Topic]], [[Topic#Part]], [[Missing]], ![[pic.png|120]], [[#Top]] and "
        "[Home](../other/Home.md).\n"
    ),
    "notes/Topic.md": "Topic.\n",
    "other/Home.md": "Another Home.\n",
    "img/pic.png": b"\x89PNG",
}


def test_each_target_leads_where_the_index_resolved_it(tmp_path: Path) -> None:
    with indexed_app(tmp_path / "vault", FILES) as app:
        with read.read_snapshot(app.db) as conn:
            ends = link_ends_of(conn, "notes/Home.md")
        assert ends == {
            "Topic": LinkEnd("notes/Topic.md", note=True),  # body and frontmatter alike
            "Missing": LinkEnd(None, note=False),
            "pic.png": LinkEnd("img/pic.png", note=False),
            "": LinkEnd("notes/Home.md", note=True),  # [[#Top]]: the note itself
            "../other/Home.md": LinkEnd("other/Home.md", note=True),
        }
        with read.read_snapshot(app.db) as conn:
            assert link_ends_of(conn, "notes/Topic.md") == {}
            assert link_ends_of(conn, "nowhere.md") == {}
        (app.vault.root / "Missing.md").write_text("Here now.\n")
        app.indexer.reconcile()
        with read.read_snapshot(app.db) as conn:
            assert link_ends_of(conn, "notes/Home.md")["Missing"] == LinkEnd("Missing.md", True)
