"""The tag counts the writer keeps: in step with the tags through every kind of change, filled
by their migration, and what the tag tools report."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Connection, Engine, inspect, text

from tests.helpers import WriteNotes
from weaver.cache import read
from weaver.cache.db import alembic_config, upgrade_to_head
from weaver.cache.read import FileFilters
from weaver.runtime.app import App

pytestmark = pytest.mark.both_backends

NOTES: dict[str, str | bytes] = {
    "a.md": "---\ntags: [project/alpha]\n---\n#project/beta #Area\n",
    "b.md": "#project #area/home/kitchen\n",
    "c.md": "---\ntags: idea\n---\nno inline tags\n",
    "d.md": "nothing tagged\n",
}


def kept(engine: Engine) -> dict[str, tuple[int, int]]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT key, notes, own FROM tag_counts")).all()
    return {key: (notes, own) for key, notes, own in rows}


def recounted(engine: Engine) -> dict[str, tuple[int, int]]:
    """The counts worked out from the tags table, the slow way."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT note_path, key FROM tags")).all()
    own = Counter(key for _, key in rows)
    under: dict[str, set[str]] = {}
    for path, key in rows:
        parts = key.split("/")
        for depth in range(1, len(parts) + 1):
            under.setdefault("/".join(parts[:depth]), set()).add(path)
    return {key: (len(paths), own.get(key, 0)) for key, paths in under.items()}


def test_counts_cover_nested_tags_once_per_note(app: App, write_notes: WriteNotes) -> None:
    write_notes(NOTES)
    app.indexer.reconcile()
    assert kept(app.db) == {
        "project": (2, 1),  # a.md twice over (alpha, beta), once
        "project/alpha": (1, 1),
        "project/beta": (1, 1),
        "area": (2, 1),
        "area/home": (1, 0),  # only an ancestor: no note carries it itself
        "area/home/kitchen": (1, 1),
        "idea": (1, 1),
    }


def test_counts_follow_edits_deletes_renames_and_a_full_reindex(
    app: App, write_notes: WriteNotes, vault_dir: Path
) -> None:
    write_notes(NOTES)
    app.indexer.reconcile()
    write_notes({"b.md": "#project/alpha now\n", "e.md": "#idea/new #IDEA\n"})
    (vault_dir / "c.md").unlink()
    (vault_dir / "a.md").rename(vault_dir / "moved.md")
    app.indexer.reconcile()
    assert kept(app.db) == recounted(app.db)
    assert "area/home" not in kept(app.db)  # its last note lost the tag: row gone
    assert kept(app.db)["idea"] == (1, 1)
    app.indexer.reconcile(full=True)
    assert kept(app.db) == recounted(app.db)


def test_tag_tools_report_the_kept_counts(app: App, write_notes: WriteNotes) -> None:
    write_notes(NOTES)
    app.indexer.reconcile()
    with read.read_snapshot(app.db) as conn:
        found = read.search_tag(conn, "project", limit=1)
        assert (found.total, len(found.files)) == (2, 1)
        assert found.matched_tags == ["project", "project/alpha", "project/beta"]
        assert read.query_files(conn, FileFilters(tag="area/home"), 10, 0).total == 1
        stats = read.get_stats(conn)
    assert stats.total_tags == 6  # area/home is no tag of its own
    assert [(t.tag, t.count) for t in stats.top_tags][:2] == [("area", 1), ("area/home/kitchen", 1)]


def test_the_migration_counts_the_tags_already_cached(app: App, write_notes: WriteNotes) -> None:
    write_notes(NOTES)
    app.indexer.reconcile()
    expected = kept(app.db)
    config = alembic_config(app.db)
    with app.db.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0006")
        assert not _has_table(conn, "tag_counts")
    upgrade_to_head(app.db)
    assert kept(app.db) == expected


def _has_table(conn: Connection, name: str) -> bool:
    return inspect(conn).has_table(name)
