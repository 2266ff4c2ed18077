"""The graph, name and tag indexes a server keeps follow edits by reading again only the notes
each indexing pass changed (`cache.changes`), and answer exactly as indexes built afresh."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, func, select

from tests.helpers import WriteNotes, write_files
from weaver.cache import changes, read
from weaver.cache import graph as cache_graph
from weaver.cache.db import alembic_config, upgrade_to_head
from weaver.cache.models import NoteChange
from weaver.index import indexer as indexer_module
from weaver.runtime.app import App
from weaver.views.link_graph import PAGERANK_TOLERANCE, Graph
from weaver.views.names import NameIndex
from weaver.views.tag_tree import TagIndex

pytestmark = pytest.mark.both_backends

VAULT: dict[str, str | bytes] = {
    "hub.md": "---\naliases: [Centre]\ntags: [topic/a]\n---\n# Hub\n[[a]] [[b]] [[missing]]",
    "a.md": "#topic/b links [[hub]], [[b|bee]] and ![[pic.png]]",
    "b.md": "up:: [[hub]]\n[[a#Heading]] #topic/a/deep",
    "sub/c.md": "[[a]] [[later]] [[sub/a]]",
    "sub/a.md": "another a, [[c]]",
}


class Ranks(dict[str, float]):
    """PageRank by path, equal to another within the iteration's tolerance: after an edit it
    starts from the earlier ranks, so its last digits may differ from a fresh graph's."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict) and dict(other) == pytest.approx(
            dict(self), abs=PAGERANK_TOLERANCE
        )

    __hash__ = None


def graph_facts(graph: Graph) -> tuple[Any, ...]:
    ranks = Ranks(graph.pagerank())
    return graph.nodes, graph.relations, graph.broken, graph.out, graph.inc, ranks


def name_facts(index: NameIndex) -> list[tuple[Any, ...]]:
    return [(key.folded, key.text, key.kind, key.row) for key in index.keys]


def tag_facts(index: TagIndex) -> dict[str, frozenset[str]]:
    return index._notes


Kept = tuple[str, Callable[[Connection], Any], Callable[..., Any], Callable[[Any], Any]]
KEPT: list[Kept] = [
    ("graph", cache_graph.load_graph, cache_graph.update_graph, graph_facts),
    ("names", cache_graph.load_names, cache_graph.update_names, name_facts),
    ("tags", cache_graph.load_tag_index, cache_graph.update_tag_index, tag_facts),
]


class Reader:
    """The three kept indexes of a server, counting how often each is built from scratch."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.builds = dict.fromkeys((name for name, *_ in KEPT), 0)
        self.kept = {
            name: cache_graph.ByVersion(self._counted(name, build), update)
            for name, build, update, _ in KEPT
        }

    def _counted(self, name: str, build: Callable[[Connection], Any]) -> Callable[..., Any]:
        def counted(conn: Connection) -> Any:
            self.builds[name] += 1
            return build(conn)

        return counted

    def check(self) -> None:
        """Each kept index, brought up to date, equals one built from the cache as it is now."""
        with read.read_snapshot(self.app.db) as conn:
            for name, build, _, facts in KEPT:
                assert facts(self.kept[name].get(conn)) == facts(build(conn)), name


@pytest.fixture
def reader(app: App, write_notes: WriteNotes) -> Reader:
    write_notes(VAULT)
    app.indexer.reconcile()
    app.indexer.reconcile()  # a first index records nothing; from here on passes do
    reader = Reader(app)
    reader.check()
    return reader


Edit = Callable[[Path], list[str]]


def write(path: str, text: str | bytes) -> Edit:
    def edit(root: Path) -> list[str]:
        write_files(root, {path: text})
        return [path]

    return edit


def remove(path: str) -> Edit:
    def edit(root: Path) -> list[str]:
        (root / path).unlink()
        return [path]

    return edit


def rename(source: str, target: str) -> Edit:
    def edit(root: Path) -> list[str]:
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        (root / source).rename(root / target)
        return [source, target]

    return edit


EDITS: list[tuple[str, Edit]] = [
    ("links, tags and title change", write("a.md", "# Alpha\n#topic/c [[sub/c]] [[nowhere]]")),
    ("a new note resolves a broken link", write("later.md", "---\naliases: [Soon]\n---\n")),
    ("a linked note is deleted", remove("hub.md")),
    ("a note moves to another folder", rename("b.md", "sub/deep/b.md")),
    ("an attachment arrives", write("pic.png", b"\x89PNG")),
    ("a same-named note takes over a link", write("sub/later.md", "#topic/a")),
    ("aliases change", write("sub/a.md", "---\naliases: [Other A, Centre]\n---\n[[c]]")),
    ("a note comes back", write("hub.md", "# Hub again\n[[a]] [[sub/deep/b]]")),
]


@pytest.mark.parametrize("steps", [1, len(EDITS)], ids=["one edit", "every edit"])
def test_kept_indexes_follow_each_edit_without_a_rebuild(
    reader: Reader, app: App, vault_dir: Path, steps: int
) -> None:
    for _, edit in EDITS[:steps]:
        app.indexer.apply_paths(edit(vault_dir))
        reader.check()
    assert reader.builds == {"graph": 1, "names": 1, "tags": 1}


def test_edits_between_two_reads_are_all_patched_in(
    reader: Reader, app: App, vault_dir: Path
) -> None:
    for _, edit in EDITS:
        app.indexer.apply_paths(edit(vault_dir))
    reader.check()
    assert reader.builds == {"graph": 1, "names": 1, "tags": 1}


def test_graph_answers_follow_an_edit(reader: Reader, app: App, vault_dir: Path) -> None:
    """What a graph tool sees: the new link is an edge, the lost one is not, backlinks too."""
    app.indexer.apply_paths(write("a.md", "[[sub/c]]")(vault_dir))
    with read.read_snapshot(app.db) as conn:
        graph = reader.kept["graph"].get(conn)
    assert list(graph.successors("a.md")) == ["sub/c.md"]
    assert "a.md" in graph.predecessors("sub/c.md")
    assert "a.md" not in graph.predecessors("hub.md")


def test_a_big_pass_makes_readers_rebuild(
    reader: Reader, app: App, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexer_module, "BIG_PASS", 2)
    paths = write("a.md", "[[b]]")(vault_dir) + write("b.md", "#new")(vault_dir)
    app.indexer.apply_paths(paths)
    reader.check()
    assert reader.builds == {"graph": 2, "names": 2, "tags": 2}
    with app.db.connect() as conn:
        assert conn.execute(select(func.count()).select_from(NoteChange)).scalar() == 0


@pytest.mark.parametrize("big", [False, True], ids=["small pass", "big pass"])
def test_a_pass_that_dies_after_writing_notes_is_not_lost(
    reader: Reader, app: App, vault_dir: Path, monkeypatch: pytest.MonkeyPatch, big: bool
) -> None:
    """Notes a pass wrote before it failed reach the readers with the next pass: as recorded
    changes for a small pass, by a rebuild for a big one."""
    if big:
        monkeypatch.setattr(indexer_module, "BIG_PASS", 1)

    def dies(*args: object, **kwargs: object) -> None:
        raise RuntimeError("power cut")

    with monkeypatch.context() as patch:
        patch.setattr(indexer_module.Indexer, "_finish", dies)
        with pytest.raises(RuntimeError):
            app.indexer.apply_paths(write("a.md", "[[sub/c]] #topic/z")(vault_dir))
    monkeypatch.setattr(indexer_module, "BIG_PASS", 2000)
    app.indexer.apply_paths(write("sub/a.md", "[[a]]")(vault_dir))
    reader.check()
    assert reader.builds["graph"] == (2 if big else 1)


LIMIT = 10


def test_changes_reach_back_only_as_far_as_they_are_kept(app: App) -> None:
    day = changes.RETAIN_MS
    with app.db.begin() as conn:
        changes.record(conn, ["a.md"])
        changes.stamp(conn, 1_000, previous=900)
        changes.record(conn, ["b.md", "c.md"])
        changes.stamp(conn, 2_000, previous=1_000)
    with app.db.connect() as conn:
        assert changes.changed_since(conn, 900, 2_000, LIMIT) == {"a.md", "b.md", "c.md"}
        assert changes.changed_since(conn, 1_000, 2_000, LIMIT) == {"b.md", "c.md"}
        assert (
            changes.changed_since(conn, 899, 2_000, LIMIT) is None
        )  # from before the first record
        assert changes.changed_since(conn, None, 2_000, LIMIT) is None
    with app.db.begin() as conn:
        changes.record(conn, ["d.md"])  # under way: no version yet, but already counted
    with app.db.connect() as conn:
        assert changes.changed_since(conn, 2_000, 2_000, LIMIT) == {"d.md"}
    with app.db.begin() as conn:
        changes.stamp(conn, 1_500 + day, previous=2_000)  # a day on: the first pass's row goes
    with app.db.connect() as conn:
        assert changes.changed_since(conn, 900, 1_500 + day, LIMIT) is None
        assert changes.changed_since(conn, 1_000, 1_500 + day, LIMIT) == {"b.md", "c.md", "d.md"}
    with app.db.begin() as conn:
        changes.forget(conn, 1_500 + day)
    with app.db.connect() as conn:
        assert changes.changed_since(conn, 1_500 + day, 1_500 + day, LIMIT) is None
    with app.db.begin() as conn:
        changes.record(conn, [f"n{i}.md" for i in range(LIMIT + 1)])
        changes.stamp(conn, 1_600 + day, previous=1_500 + day)
    with app.db.connect() as conn:  # too many to patch: the reader rebuilds
        assert changes.changed_since(conn, 1_501 + day, 1_600 + day, LIMIT) is None
        assert len(changes.changed_since(conn, 1_501 + day, 1_600 + day, LIMIT + 1) or ()) == 11


def test_a_downgrade_past_the_change_log_leaves_readers_to_rebuild(
    reader: Reader, app: App, vault_dir: Path
) -> None:
    """Changes made while the cache ran without `note_changes` were never recorded: after the
    upgrade again, a reader holding an older version builds afresh instead of missing them."""
    app.indexer.apply_paths(write("a.md", "[[b]]")(vault_dir))
    reader.check()
    config = alembic_config(app.db)
    with app.db.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0008")
    upgrade_to_head(app.db)
    with app.db.connect() as conn:
        assert changes.changed_since(conn, 0, 2**62, LIMIT) is None


def version(app: App) -> int | None:
    with app.db.connect() as conn:
        return read.last_updated(conn)


def unchanged(app: App, since: int | None) -> bool:
    with app.db.connect() as conn:
        return changes.unchanged_since(conn, since)


def test_unchanged_since_holds_until_a_pass_writes_or_touches_a_note(
    reader: Reader, app: App, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a base's kept rows rely on to skip listing the files: true only while every note
    and attachment is exactly as it was at the version."""
    held = version(app)
    assert unchanged(app, held)
    app.indexer.reconcile()  # nothing changed on disk: nothing moves
    assert unchanged(app, held)

    # A touch (new time, same content) changes the note's row, `file.mtime` in a base.
    path = vault_dir / "a.md"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    app.indexer.reconcile()
    assert not unchanged(app, held)
    held = version(app)
    assert unchanged(app, held)

    app.indexer.apply_paths(write("pic.png", b"\x89PNG")(vault_dir))  # an attachment
    assert not unchanged(app, held)
    held = version(app)

    def dies(*args: object, **kwargs: object) -> None:
        raise RuntimeError("power cut")

    with monkeypatch.context() as patch:  # a pass whose notes are written, not yet ended
        patch.setattr(indexer_module.Indexer, "_finish", dies)
        with pytest.raises(RuntimeError):
            app.indexer.apply_paths(write("b.md", "changed")(vault_dir))
    assert version(app) == held and not unchanged(app, held)
    app.indexer.apply_paths(write("sub/a.md", "[[a]]")(vault_dir))  # stamps what it left
    held = version(app)
    assert unchanged(app, held)

    monkeypatch.setattr(indexer_module, "BIG_PASS", 1)  # records nothing: readers rebuild
    with monkeypatch.context() as patch:
        patch.setattr(indexer_module.Indexer, "_finish", dies)
        with pytest.raises(RuntimeError):
            app.indexer.apply_paths(write("b.md", "changed again")(vault_dir))
    assert not unchanged(app, held)
    assert not unchanged(app, None)


def test_a_cache_made_anew_makes_readers_of_the_old_one_rebuild(app: App) -> None:
    """A version held from before the cache was made again (deleted, rebuilt) says nothing of
    the new one, whose first index is recorded nowhere."""
    with app.db.begin() as conn:
        changes.forget(conn, None)  # what the first index of a new cache does
        changes.record(conn, ["a.md"])
        changes.stamp(conn, int(time.time() * 1000) + 10, previous=None)
    with app.db.connect() as conn:
        held = int(time.time() * 1000) - 60_000  # a version of the cache before, a minute ago
        assert changes.changed_since(conn, held, held + 120_000, LIMIT) is None
