"""Cache reads: filters, prefixes, wildcards, pagination, link and stats queries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, insert, select, text

from tests.helpers import indexed_app, statements_run, write_files
from weaver.cache import graph as cache_graph
from weaver.cache import read
from weaver.cache.models import Link, Note, Tag
from weaver.cache.read import FileFilters, LinkTarget
from weaver.config import Settings
from weaver.paging import Page
from weaver.runtime.app import App, open_app
from weaver.views.tag_tree import TagIndex

pytestmark = pytest.mark.both_backends

FILES: dict[str, str | bytes] = {
    "Home.md": (
        "---\ntype: hub\nstatus: active\ntags: [Project/Alpha]\naliases: [Start]\n---\n"
        "# Home\nSee [[Topic]], [[Missing]] and ![[img.png]]. #inline\nAgain [[Topic]].\n"
    ),
    "technical/Topic.md": "---\ntype: concept\nstatus: active\n---\nBack to [[Home]] #neural\n",
    "technical/sub/deep.md": "---\ntype: concept\nstatus: draft\n---\n[[Topic]] #project #Neural\n",
    "technical-old/old.md": "---\ntype: concept\n---\n#projects [[Home]]\n",
    "tags.md": "#a_b #axb #a%b #100s [[nowhere]]\n",
    "img.png": b"\x89PNG",
}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    with indexed_app(tmp_path_factory.mktemp("read") / "vault", FILES) as indexed:
        yield indexed


@pytest.fixture
def conn(app: App) -> Iterator[Connection]:
    with read.read_snapshot(app.db) as connection:
        yield connection


def paths(page: Page[read.FileSummary]) -> list[str]:
    return [f.path for f in page.items]


def query(
    conn: Connection, limit: int = 50, offset: int = 0, **filters: Any
) -> Page[read.FileSummary]:
    return read.query_files(conn, FileFilters(**filters), limit, offset)


def test_all_files_ordered_by_path(conn: Connection) -> None:
    page = query(conn)
    assert paths(page) == [
        "Home.md",
        "tags.md",
        "technical-old/old.md",
        "technical/Topic.md",
        "technical/sub/deep.md",
    ]
    assert (page.total, page.has_more) == (5, False)


def test_directory_matches_the_folder_and_its_subfolders_only(conn: Connection) -> None:
    assert paths(query(conn, directory="technical")) == [
        "technical/Topic.md",
        "technical/sub/deep.md",
    ]
    assert paths(query(conn, directory="technical/sub")) == ["technical/sub/deep.md"]
    assert paths(query(conn, directory="technical-old")) == ["technical-old/old.md"]
    assert paths(query(conn, directory="tech")) == []


def test_type_status_and_tag_filters_combine_with_and(conn: Connection) -> None:
    assert len(paths(query(conn, type="concept"))) == 3
    assert paths(query(conn, type="concept", status="active")) == ["technical/Topic.md"]
    assert paths(query(conn, type="concept", directory="technical", status="draft")) == [
        "technical/sub/deep.md"
    ]
    assert paths(query(conn, type="Concept")) == []  # frontmatter values match exactly


def test_tag_filter_matches_nested_tags_not_longer_names(conn: Connection) -> None:
    assert paths(query(conn, tag="project")) == ["Home.md", "technical/sub/deep.md"]
    assert paths(query(conn, tag="project/alpha")) == ["Home.md"]
    assert paths(query(conn, tag="neural")) == ["technical/Topic.md", "technical/sub/deep.md"]


def test_pagination_total_and_has_more(conn: Connection) -> None:
    first = query(conn, limit=2)
    second = query(conn, limit=2, offset=2)
    last = query(conn, limit=2, offset=4)
    beyond = query(conn, limit=2, offset=10)
    assert [p.total for p in (first, second, last, beyond)] == [5, 5, 5, 5]
    assert [p.has_more for p in (first, second, last, beyond)] == [True, True, False, False]
    assert paths(first) + paths(second) + paths(last) == paths(query(conn))
    assert paths(beyond) == []


def test_files_carry_tags_and_metadata(conn: Connection) -> None:
    home = query(conn, limit=1).items[0]
    assert home.tags == ("inline", "Project/Alpha")
    assert (home.type, home.status, home.title) == ("hub", "active", "Home")
    assert home.frontmatter["aliases"] == ["Start"]
    assert home.modified > 1_600_000_000_000  # epoch milliseconds


def test_a_page_costs_the_same_few_queries_whatever_its_size(app: App) -> None:
    with statements_run(app.db) as statements, read.read_snapshot(app.db) as conn:
        query(conn, limit=1)
        small = len(statements)
        query(conn, limit=500)
        large = len(statements) - small
    assert small <= 4  # BEGIN, count, page, tags
    assert large == 3


def explain(conn: Connection, statement: Any) -> str:
    compiled = statement.compile(conn, compile_kwargs={"literal_binds": True})
    plan = conn.execute(text(f"EXPLAIN QUERY PLAN {compiled}")).all()
    return " ".join(str(row[-1]) for row in plan)


def test_folder_and_tag_filters_use_their_indexes(conn: Connection) -> None:
    folder = select(Note.path).where(read.under_prefix(Note.folder, "technical"))
    assert "ix_notes_folder" in explain(conn, folder)
    tags = select(Tag.note_path).where(read.tag_condition("project"))
    assert "COVERING INDEX ix_tags_key_note" in explain(conn, tags)
    backlinks = select(Link.source_path).where(Link.target_path == "Home.md")
    assert "COVERING INDEX ix_links_target_source" in explain(conn, backlinks)


def test_get_file_lists_distinct_targets_in_order_and_backlinks(conn: Connection) -> None:
    detail = read.get_file(conn, "Home.md")
    assert detail is not None
    assert detail.outgoing == [
        LinkTarget("technical/Topic.md", broken=False),
        LinkTarget("Missing", broken=True),
        LinkTarget("img.png", broken=False),
    ]
    assert detail.incoming == ["technical-old/old.md", "technical/Topic.md"]
    assert detail.aliases == ("Start",)
    assert read.get_file(conn, "nope.md") is None


def search_tags(conn: Connection, pattern: str, limit: int = 100) -> read.TagSearch:
    return cache_graph.search_tags(conn, cache_graph.tag_index_cache(), pattern, limit)


def test_search_tags_exact_nested_and_wildcards(conn: Connection) -> None:
    found = search_tags(conn, "project")
    assert [f.path for f in found.files] == ["Home.md", "technical/sub/deep.md"]
    assert found.matched_tags == ["project", "project/alpha"]
    wild = search_tags(conn, "proj*")
    assert wild.matched_tags == ["project", "project/alpha", "projects"]
    assert search_tags(conn, "*/alpha").matched_tags == ["project/alpha"]
    assert search_tags(conn, "neura?").total == 2


@pytest.mark.parametrize("pattern", ["proj*", "*/alpha", "neura?", "a?b", "*", "project"])
def test_search_tags_lists_every_note_whose_tags_match(conn: Connection, pattern: str) -> None:
    carrying = select(Tag.note_path).where(read.tag_pattern_condition(pattern)).distinct()
    expected = sorted(conn.execute(carrying).scalars())
    for limit in (1, 100):
        found = search_tags(conn, pattern, limit)
        assert ([f.path for f in found.files], found.total) == (expected[:limit], len(expected))


def test_a_plain_tag_is_answered_without_building_the_tag_index(conn: Connection) -> None:
    builds: list[int] = []

    def build(connection: Connection) -> TagIndex:
        builds.append(1)
        return cache_graph.load_tag_index(connection)

    index = cache_graph.ByVersion(build)
    cache_graph.search_tags(conn, index, "project", 100)
    assert builds == []
    cache_graph.search_tags(conn, index, "proj*", 100)
    cache_graph.search_tags(conn, index, "*alpha", 100)
    assert builds == [1]


def test_search_tags_escapes_like_metacharacters(conn: Connection) -> None:
    assert search_tags(conn, "a_b").matched_tags == ["a_b"]
    assert search_tags(conn, "a?b").matched_tags == ["a_b", "axb"]
    assert search_tags(conn, "a%b").matched_tags == []


def test_search_tags_limit_keeps_the_total(conn: Connection) -> None:
    found = search_tags(conn, "proj*", 1)
    assert ([f.path for f in found.files], found.total) == (["Home.md"], 3)


def test_wildcard_to_like() -> None:
    assert read.wildcard_to_like("a*b?c") == "a%b_c"
    assert read.wildcard_to_like("50%_\\") == "50\\%\\_\\\\"


def test_search_links_counts_are_totals_when_limited(conn: Connection) -> None:
    both = read.search_links(conn, "Home.md", "both", 100)
    assert [t.target for t in both.outgoing] == ["Missing", "img.png", "technical/Topic.md"]
    assert both.incoming == ["technical-old/old.md", "technical/Topic.md"]
    limited = read.search_links(conn, "Home.md", "both", 1)
    assert ([t.target for t in limited.outgoing], limited.incoming) == (
        ["Missing"],
        ["technical-old/old.md"],
    )
    assert (limited.outgoing_total, limited.incoming_total) == (3, 2)
    incoming = read.search_links(conn, "Home.md", "incoming", 100)
    assert (incoming.outgoing, incoming.outgoing_total, incoming.incoming_total) == ([], 0, 2)


def test_stats(conn: Connection) -> None:
    stats = read.get_stats(conn)
    assert (stats.total_files, stats.total_attachments) == (5, 1)
    assert stats.total_links == 8  # occurrences: the repeated [[Topic]] and the embed count
    assert stats.broken_links == 2
    assert stats.files_by_type == {"concept": 3, "hub": 1}
    assert stats.files_by_status == {"active": 2, "draft": 1}
    assert stats.top_tags[:2] == [read.TagCount("neural", 2), read.TagCount("100s", 1)]
    assert stats.vault_size == sum(len(c) for c in _encoded(FILES))
    assert stats.last_updated is not None and stats.last_updated > 1_600_000_000_000


def test_top_tags_are_the_ten_most_used(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        f"n{i}.md": " ".join(f"#t{j}" for j in range(i)) for i in range(13)
    }
    write_files(tmp_path / "v", files)
    app = open_app(Settings(vault=tmp_path / "v"))
    try:
        app.indexer.reconcile()
        with read.read_snapshot(app.db) as conn:
            top = read.get_stats(conn).top_tags
    finally:
        app.close()
    assert [t.tag for t in top] == [f"t{j}" for j in range(10)]
    assert [t.count for t in top] == list(range(12, 2, -1))


def test_snapshot_does_not_see_writes_made_after_it_began(app: App) -> None:
    with read.read_snapshot(app.db) as conn:
        before = query(conn).total
        with app.db.begin() as writer:
            writer.execute(insert(Note), [_note_row("zz/new.md")])
        assert query(conn).total == before
    with read.read_snapshot(app.db) as conn:
        assert query(conn).total == before + 1
    with app.db.begin() as writer:
        writer.execute(text("DELETE FROM notes WHERE path = 'zz/new.md'"))


def test_version_stamps_are_read_once_a_snapshot_and_anew_in_the_next(app: App) -> None:
    """Kept views and the vector matrix ask for the stamps several times a call: one statement
    a snapshot answers them all; the next snapshot sees a stamp moved meanwhile."""
    from weaver.cache import vectors

    with statements_run(app.db) as statements, read.read_snapshot(app.db) as conn:
        first = read.last_updated(conn)
        for _ in range(3):
            assert (read.last_updated(conn), vectors.vectors_version(conn)) == (first, 0)
    assert len([sql for sql in statements if "cache_state" in sql]) == 1
    try:
        with app.db.begin() as writer:
            read_again = read.last_updated(writer)
            writer.execute(
                text("UPDATE cache_state SET value = :v WHERE key = 'last_updated'"),
                {"v": str((first or 0) + 1)},
            )
        assert read_again == first  # outside a snapshot: read each time
        with read.read_snapshot(app.db) as conn:
            assert read.last_updated(conn) == (first or 0) + 1
    finally:
        with app.db.begin() as writer:
            writer.execute(
                text("UPDATE cache_state SET value = :v WHERE key = 'last_updated'"),
                {"v": str(first)},
            )


def test_empty_cache(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    app = open_app(Settings(vault=tmp_path / "empty"))
    try:
        with read.read_snapshot(app.db) as conn:
            stats = read.get_stats(conn)
            page = query(conn)
    finally:
        app.close()
    assert (stats.total_files, stats.total_links, stats.vault_size) == (0, 0, 0)
    assert (stats.last_updated, stats.top_tags, stats.files_by_type) == (None, [], {})
    assert (page.items, page.total, page.has_more) == ([], 0, False)


def _encoded(files: dict[str, str | bytes]) -> list[bytes]:
    return [c if isinstance(c, bytes) else c.encode() for c in files.values()]


def _note_row(path: str) -> dict[str, Any]:
    folder, _, name = path.rpartition("/")
    return {
        "path": path,
        "folder": folder,
        "name": name,
        "title": name,
        "frontmatter": {},
        "type": None,
        "status": None,
        "aliases": [],
        "size": 0,
        "created": 0,
        "modified": 0,
        "mtime_ns": 0,
        "content_hash": "",
        "indexed_at": 0,
        "word_count": 0,
        "tasks_open": 0,
        "tasks_done": 0,
        "error": None,
    }
