"""Full-text search: user text to safe FTS5, ranking and snippets, filters, the index kept in step
by the indexer, the 0003 migration's backfill, and the real tasks-demo corpus."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, event, inspect, text

from tests.corpora import require_corpora
from tests.helpers import WriteNotes
from weaver.cache import fts, read, write
from weaver.cache.db import alembic_config, upgrade_to_head
from weaver.config import Settings
from weaver.runtime.app import App, open_app
from weaver.vault.events import NoteModified, VaultEvent

pytestmark = pytest.mark.both_backends

NOTES: dict[str, str | bytes] = {
    "Cooking.md": "---\ntags: [food]\n---\n# Cooking\nRunning a café kitchen is hard work.\n",
    "food/Bread.md": "# Bread\nBake bread with flour, water and salt. #food/baking\n",
    "food/Soup.md": "# Soup\nA soup of leeks. Cooking for friends, not the café.\n",
    "travel/Paris.md": "# Paris\nThe best café in Paris serves bread.\n`code café` is code.\n",
    "Notes on C++.md": "# C++ tips\nTemplates: `std::vector`. Use C++ NEAR the metal.\n",
}


def search(
    engine: Engine,
    query: str,
    limit: int = 20,
    offset: int = 0,
    *,
    directory: str | None = None,
    tag: str | None = None,
) -> fts.SearchPage:
    expression = fts.fts_query(query)
    if expression is None:
        return fts.SearchPage([], 0)
    with read.read_snapshot(engine) as conn:
        return fts.search(conn, expression, limit, offset, directory=directory, tag=tag)


def paths(page: fts.SearchPage) -> list[str]:
    return [hit.path for hit in page.hits]


def search_rows(app: App) -> dict[int, str]:
    """Each full-text row's path, by its rowid (on PostgreSQL, whose rows are keyed by path,
    by the rowid of the note the row belongs to)."""
    with app.db.connect() as conn:
        if conn.dialect.name == "postgresql":
            rows = (
                "SELECT n.search_rowid, t.note_path FROM note_texts t "
                "JOIN notes n ON n.path = t.note_path"
            )
        else:
            rows = "SELECT rowid, path FROM notes_fts"
        return dict(conn.execute(text(rows)).all())


def note_rowids(app: App) -> dict[int, str]:
    """Each note's path, by the full-text rowid the notes table holds for it (the filters'
    way from a match to its note)."""
    with app.db.connect() as conn:
        return dict(conn.execute(text("SELECT search_rowid, path FROM notes")).all())


@pytest.fixture
def indexed(app: App, write_notes: WriteNotes) -> App:
    write_notes(NOTES)
    app.indexer.reconcile()
    return app


# -- user text -> FTS5 ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expression"),
    [
        ("cafe bread", '"cafe" "bread"'),
        ('"best café" paris', '"best café" "paris"'),
        ("bre*", '"bre"*'),
        ("bread OR soup", '("bread" OR "soup")'),
        ("with AND, OR and", '"with" AND ("AND," OR "and")'),
        ("bread OR soup cafe", '("bread" OR "soup") AND "cafe"'),
        ("café -paris", '("café") NOT "paris"'),
        ("café NOT paris NOT soup", '("café") NOT ("paris" OR "soup")'),
        ("a AND b", '"a" "b"'),
        ("and or not", '"and" "or" "not"'),
        ('say "hi', '"say" "hi"'),
        ("title:x ^y (z) NEAR(a b)", '"title:x" "^y" "(z)" "NEAR(a" "b)"'),
        ("", None),
        ("   ", None),
        ('"" *** ( ) :', None),
        ("😀 🎉", None),
        ("NOT paris", None),
        ("OR", None),
    ],
)
def test_fts_query_quotes_every_term(query: str, expression: str | None) -> None:
    assert fts.fts_query(query) == expression


def test_fts_query_caps_the_number_of_terms() -> None:
    expression = fts.fts_query(" ".join(f"w{i}" for i in range(1000)))
    assert expression is not None and expression.count('"') == 2 * fts.MAX_TERMS


HOSTILE = [
    '"',
    '"""',
    "AND OR NOT",
    "a AND",
    "OR b",
    "NEAR(",
    "NEAR(a b, 2)",
    "*",
    "a*b*",
    ":",
    "body:cafe",
    "^cafe",
    "(",
    "((cafe)",
    '"unbalanced cafe',
    "cafe\"'",
    "😀",
    "café 😀 ",
    "-",
    "--cafe",
    "NOT",
    "'; DROP TABLE notes; --",
    "\x00",
    "\\",
    "{a b}",
    "a + b",
    "\u200bcafe",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(indexed: App, query: str) -> None:
    page = search(indexed.db, query)
    assert page.total >= len(page.hits)


def test_random_punctuation_soup_never_raises(indexed: App) -> None:
    alphabet = [
        *"\"*:^()-+{}[],.;!?#~`\\'",
        "AND ",
        "OR ",
        "NOT ",
        "NEAR",
        " ",
        "é",
        "😀",
        "a",
    ]
    rng = random.Random(6)
    for _ in range(300):
        query = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 12)))
        search(indexed.db, query)


# -- ranking, snippets, filters, pagination ------------------------------------------------


def test_words_are_stemmed_case_and_accent_folded(indexed: App) -> None:
    assert paths(search(indexed.db, "RUN CAFE")) == ["Cooking.md"]
    assert set(paths(search(indexed.db, "cafe"))) == {
        "Cooking.md",
        "food/Soup.md",
        "travel/Paris.md",
    }


def test_title_matches_rank_first_and_snippets_mark_matches(indexed: App) -> None:
    page = search(indexed.db, "cooking")
    assert paths(page) == ["Cooking.md", "food/Soup.md"]
    assert page.hits[0].score > page.hits[1].score > 0
    assert "<mark>Cooking</mark>" in page.hits[1].snippet


def test_phrase_prefix_or_and_exclusion(indexed: App) -> None:
    assert paths(search(indexed.db, '"best café"')) == ["travel/Paris.md"]
    assert paths(search(indexed.db, '"café best"')) == []
    assert set(paths(search(indexed.db, "lee*"))) == {"food/Soup.md"}
    assert set(paths(search(indexed.db, "leeks OR flour"))) == {"food/Soup.md", "food/Bread.md"}
    assert set(paths(search(indexed.db, "café -paris"))) == {"Cooking.md", "food/Soup.md"}
    assert paths(search(indexed.db, "C++ NEAR(")) == ["Notes on C++.md"]


def test_text_in_code_and_frontmatter_is_searchable_body_text(indexed: App) -> None:
    # Unlike links and tags, words in code spans are words the user wrote: they are found.
    assert paths(search(indexed.db, "vector")) == ["Notes on C++.md"]
    assert paths(search(indexed.db, "tags food")) == []  # frontmatter is not body text


def test_folder_and_tag_filters(indexed: App) -> None:
    assert set(paths(search(indexed.db, "cafe OR bread", directory="food"))) == {
        "food/Bread.md",
        "food/Soup.md",
    }
    assert set(paths(search(indexed.db, "cafe OR bread", tag="food"))) == {
        "Cooking.md",
        "food/Bread.md",
    }
    # Both filters at once; the vault root ("") filters nothing.
    both = search(indexed.db, "cafe OR bread", directory="food", tag="food")
    assert (paths(both), both.total) == (["food/Bread.md"], 1)
    assert paths(search(indexed.db, "cafe", directory="")) == paths(search(indexed.db, "cafe"))


@pytest.mark.parametrize(
    ("query", "directory", "tag"),
    [
        ("cafe OR bread OR cooking", None, None),
        ("cafe OR bread", "food", None),
        ("cafe OR bread", None, "food"),
        ("nothing-matches-this", None, None),
    ],
)
def test_ranked_paths_rank_as_search_does(
    indexed: App, query: str, directory: str | None, tag: str | None
) -> None:
    """Hybrid search fuses these paths: the same notes, in the same order, as a search page."""
    expression = fts.fts_query(query)
    assert expression is not None
    expected = paths(search(indexed.db, query, directory=directory, tag=tag))
    with read.read_snapshot(indexed.db) as conn:
        ranked = fts.ranked_paths(conn, expression, 20, directory=directory, tag=tag)
        assert fts.ranked_paths(conn, expression, 2, directory=directory, tag=tag) == expected[:2]
    assert ranked == expected


def test_pagination_total_and_order_are_stable(indexed: App) -> None:
    everything = search(indexed.db, "cafe OR bread OR cooking")
    assert everything.total == 5 - 1  # all but the C++ note
    pages = [search(indexed.db, "cafe OR bread OR cooking", limit=2, offset=o) for o in (0, 2)]
    assert [p.total for p in pages] == [4, 4]
    assert paths(pages[0]) + paths(pages[1]) == paths(everything)
    # A short last page, and pages past the end, still report every match.
    last = search(indexed.db, "cafe OR bread OR cooking", limit=3, offset=3)
    assert (paths(last), last.total) == (paths(everything)[3:], 4)
    for offset in (4, 9):
        beyond = search(indexed.db, "cafe OR bread OR cooking", limit=3, offset=offset)
        assert (beyond.hits, beyond.total) == ([], 4)


def test_pages_of_equally_ranked_notes_neither_overlap_nor_skip(
    app: App, write_notes: WriteNotes
) -> None:
    # Same body, same length, the word nowhere in the titles: every score ties.
    write_notes({f"n{i:02}.md": "a shared paragraph\n" for i in range(13)})
    app.indexer.reconcile()
    everything = search(app.db, "shared")
    assert len({hit.score for hit in everything.hits}) == 1
    pages = [paths(search(app.db, "shared", limit=5, offset=o)) for o in (0, 5, 10)]
    assert [len(p) for p in pages] == [5, 5, 3]
    assert pages[0] + pages[1] + pages[2] == paths(everything)
    assert sorted(paths(everything)) == [f"n{i:02}.md" for i in range(13)]


# -- kept in step ---------------------------------------------------------------------------


def test_edits_deletes_and_renames_follow_the_disk(indexed: App, vault_dir: Path) -> None:
    (vault_dir / "food" / "Soup.md").write_text("# Soup\nNow with pumpkin.\n", encoding="utf-8")
    (vault_dir / "food" / "Bread.md").unlink()
    (vault_dir / "travel" / "Paris.md").rename(vault_dir / "travel" / "Lyon.md")
    indexed.indexer.apply_paths(["food/Soup.md", "food/Bread.md", "travel"])
    assert paths(search(indexed.db, "pumpkin")) == ["food/Soup.md"]
    assert paths(search(indexed.db, "leeks")) == []
    assert paths(search(indexed.db, "flour")) == []
    assert paths(search(indexed.db, "serves")) == ["travel/Lyon.md"]
    assert paths(search(indexed.db, "serves", directory="travel")) == ["travel/Lyon.md"]
    assert len(search_rows(indexed)) == 4
    assert note_rowids(indexed) == search_rows(indexed)


def test_non_utf8_note_is_indexed_without_body(app: App, write_notes: WriteNotes) -> None:
    write_notes({"latin.md": "caf\xe9 au lait".encode("latin-1"), "ok.md": "au lait"})
    app.indexer.reconcile()
    assert paths(search(app.db, "lait")) == ["ok.md"]


def test_search_rowids_grow_with_the_notes_written(indexed: App, vault_dir: Path) -> None:
    """Rows are appended (FTS5 starts a new segment at any rowid lower than the one before): a
    first index numbers the notes in path order, an edited note gets the next rowid."""
    assert sorted(note_rowids(indexed).items()) == list(enumerate(sorted(NOTES), start=1))
    (vault_dir / "Cooking.md").write_text("# Cooking\nNow with saffron.\n", encoding="utf-8")
    indexed.indexer.apply_paths(["Cooking.md"])
    assert note_rowids(indexed)[len(NOTES) + 1] == "Cooking.md"
    assert note_rowids(indexed) == search_rows(indexed)
    assert paths(search(indexed.db, "saffron")) == ["Cooking.md"]
    assert paths(search(indexed.db, "kitchen")) == []


# -- migration -------------------------------------------------------------------------------


def test_an_old_cache_upgraded_in_place_becomes_searchable_without_events(
    settings: Settings, write_notes: WriteNotes
) -> None:
    write_notes(NOTES)
    app = open_app(settings)
    app.indexer.reconcile()
    config = alembic_config(app.db)
    with app.db.begin() as conn:  # back to a cache from before full-text search
        config.attributes["connection"] = conn
        command.downgrade(config, "0002")
        assert not any(fts.is_search_table(name) for name in inspect(conn).get_table_names())
    upgrade_to_head(app.db)
    assert search(app.db, "leeks").total == 0  # the table is back, still empty
    events: list[VaultEvent] = []
    app.bus.subscribe(events.extend)
    report = app.indexer.reconcile()
    assert paths(search(app.db, "leeks")) == ["food/Soup.md"]
    assert not any(isinstance(e, NoteModified) for e in events) and not report.changed
    with app.db.connect() as conn:
        pending = conn.execute(text("SELECT value FROM cache_state WHERE key='reparse_pending'"))
        assert pending.scalar_one() == "false"
    app.indexer.reconcile()  # and only once: the next start does not re-read everything
    app.close()


def test_a_cache_from_before_search_rowids_gets_them_on_upgrade(indexed: App) -> None:
    config = alembic_config(indexed.db)
    with indexed.db.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0009")
    upgrade_to_head(indexed.db)
    if indexed.db.dialect.name == "postgresql":  # its texts come back from the disk (0017)
        indexed.indexer.reconcile()
    assert note_rowids(indexed) == search_rows(indexed) != {}
    assert set(paths(search(indexed.db, "cafe OR bread", tag="food"))) == {
        "Cooking.md",
        "food/Bread.md",
    }


@pytest.mark.sqlite_only  # FTS5 rows have no key tying them to a note; PostgreSQL's do
def test_a_stray_full_text_row_never_stops_indexing(indexed: App, write_notes: WriteNotes) -> None:
    """A row whose note is gone, at the rowid the next note gets, is replaced by that note's."""
    with indexed.db.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO notes_fts (rowid, path, title, body) VALUES (:r, 'x.md', 'X', 'ghost')"
            ),
            {"r": len(NOTES) + 1},
        )
    write_notes({"Tea.md": "# Tea\nGreen tea.\n"})
    assert indexed.indexer.reconcile().added == 1
    assert paths(search(indexed.db, "green")) == ["Tea.md"]
    assert paths(search(indexed.db, "ghost")) == []
    assert note_rowids(indexed) == search_rows(indexed)


@pytest.mark.sqlite_only  # FTS5's rowids: PostgreSQL keys its search rows by path
def test_hashed_rowids_of_an_older_cache_are_renumbered_on_upgrade(indexed: App) -> None:
    config = alembic_config(indexed.db)
    with indexed.db.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0011")
    hashed = note_rowids(indexed)
    assert hashed == search_rows(indexed) and min(hashed) > 2**32  # hashes, as 0011 wrote them
    # (No search here: this code searches the columns 0014 gave the table.)
    upgrade_to_head(indexed.db)
    assert sorted(note_rowids(indexed).items()) == list(enumerate(sorted(NOTES), start=1))
    assert note_rowids(indexed) == search_rows(indexed)
    assert paths(search(indexed.db, "leeks", directory="food")) == ["food/Soup.md"]


# -- the real corpus ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tasks_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    vault = require_corpora() / "tasks-demo"
    cache = tmp_path_factory.mktemp("fts") / "cache.db"
    app = open_app(Settings(vault=vault, database_url=f"sqlite:///{cache}"))
    app.indexer.reconcile()
    yield app
    app.close()


@pytest.mark.corpus
def test_tasks_demo_phrases_prefixes_and_filters(tasks_demo: App) -> None:
    page = search(tasks_demo.db, '"custom filters"')
    assert page.total == 4
    assert all(h.path.startswith("Functions/Custom Filters") for h in page.hits[:3])
    assert "<mark>Custom Filters</mark>" in page.hits[0].snippet
    found = paths(search(tasks_demo.db, "frontmatter propert*", directory="How To"))
    assert found[0] == "How To/Access properties in frontmatter.md"
    assert all(p.startswith("How To/") for p in found)
    for query in HOSTILE:
        search(tasks_demo.db, query)


# -- the note text a reader without the files reads ----------------------------------------------


def test_postgresql_keeps_each_note_as_read(app: App, vault_dir: Path, backend: str) -> None:
    """PostgreSQL caches keep the whole text (frontmatter block and body) for readers on other
    hosts; SQLite caches, always beside their files, keep none."""
    note = "---\ntags: [a]\ntitle: Tea\n---\n# Tea\nGreen tea, café.\n"
    (vault_dir / "tea.md").write_text(note, encoding="utf-8")
    app.indexer.reconcile()

    def stored() -> str | None:
        with app.db.connect() as conn:
            return fts.get_note_text(conn, "tea.md")

    if backend == "sqlite":
        assert stored() is None
        return
    assert stored() == note
    (vault_dir / "tea.md").write_text("no frontmatter now\n", encoding="utf-8")
    app.indexer.apply_paths(["tea.md"])
    assert stored() == "no frontmatter now\n"
    (vault_dir / "tea.md").unlink()
    app.indexer.apply_paths(["tea.md"])
    assert stored() is None


def test_snippets_of_a_big_note_stay_bounded(app: App, vault_dir: Path) -> None:
    """A note far past the snippet's read limit still answers, with the hit marked when it
    comes early, on either backend."""
    body = "# Big\nthe needle is here\n" + "filler words go on and on\n" * 40_000
    (vault_dir / "big.md").write_text(body, encoding="utf-8")
    app.indexer.reconcile()
    page = search(app.db, "needle")
    assert paths(page) == ["big.md"]
    assert "<mark>needle</mark>" in page.hits[0].snippet
    assert len(page.hits[0].snippet) < 400


def test_planner_statistics_cover_the_search_table(indexed: App) -> None:
    """After a big pass the planner knows the notes (and, on PostgreSQL, the search table and
    the tags, links and properties: guessing, it hashed every note of a common tag to sort out
    a page)."""
    with indexed.db.begin() as conn:
        write.refresh_statistics(conn)
    with indexed.db.connect() as conn:
        assert not write.statistics_missing(conn)
        if conn.dialect.name == "sqlite":
            return
        analyzed = conn.execute(
            text(
                "SELECT DISTINCT tablename FROM pg_stats "  # written by ANALYZE itself
                "WHERE tablename = ANY(:tables) ORDER BY 1"
            ),
            {"tables": list(write.PG_ANALYZED)},
        ).scalars()
        # (these notes have no links: an empty table has no column statistics to write)
        assert set(analyzed) >= {"notes", "note_texts", "tags", "tag_counts", "note_properties"}


def test_each_statement_is_planned_with_its_values(indexed: App) -> None:
    """On PostgreSQL no statement is prepared however often it runs: a generic plan cannot
    see how many notes a tag or a word has, and picked plans up to six times slower."""
    with read.read_snapshot(indexed.db) as conn:
        for _ in range(12):
            page = fts.search(conn, '"bread"', 20, 0, tag="food")
            assert paths(page) == ["food/Bread.md"]
        if conn.dialect.name == "postgresql":
            prepared = conn.exec_driver_sql("SELECT count(*) FROM pg_prepared_statements")
            assert prepared.scalar_one() == 0


def test_a_common_word_is_counted_through_the_index(indexed: App, backend: str) -> None:
    """A word most notes hold is found and counted from the GIN index: a sequential scan,
    which the planner prefers when it can see the tsquery (or when the rows are narrow, as
    since 0018), reads every note's document out of TOAST (31-47 ms at 10,000 notes, against
    2-3 through the index)."""
    if backend == "sqlite":  # FTS5 has one plan
        assert search(indexed.db, "bread").total == 2
        return
    from weaver.cache import pg_search

    with indexed.db.begin() as conn:
        # Texts without notes, rather than indexing 3,000 notes: the foreign key is not looked at.
        conn.exec_driver_sql("SET LOCAL session_replication_role = replica")
        conn.exec_driver_sql(
            "INSERT INTO note_texts (note_path, front, body, document) "
            "SELECT 'n' || i || '.md', '', repeat('bread and water ', 150), "
            "to_tsvector('weaver_search', repeat('bread and water ' || i || ' ', 150)) "
            "FROM generate_series(1, 3000) AS i"
        )
        conn.exec_driver_sql("ANALYZE note_texts")
        plans: list[str] = []

        def explained(*args: Any) -> tuple[str, Any]:
            cursor, sql, parameters = args[1], args[2], args[3]
            if "note_texts" in sql:
                cursor.execute("EXPLAIN " + sql, parameters)
                plans.append("\n".join(row[0] for row in cursor.fetchall()))
            return sql, parameters

        event.listen(conn, "before_cursor_execute", explained, retval=True)
        try:  # a page of one: the page, then the count
            _, total = pg_search.search(conn, '"bread"', 1, 0, directory=None, tag=None, pinned=())
        finally:
            event.remove(conn, "before_cursor_execute", explained)
        enabled = conn.exec_driver_sql("SHOW enable_seqscan").scalar_one()
    assert total == 3002
    assert len(plans) == 2
    for plan in plans:
        assert "ix_note_texts_document" in plan
        assert "Seq Scan on note_texts" not in plan
    assert enabled == "on"  # as it was, for the rest of the transaction
