"""Full-text ranking on PostgreSQL (`cache.pg_search`): only the best candidates by the cheap
score (`ts_rank_cd` over each row's `lead`: names, headings and the body's start) are ranked
over their whole documents; the rest of the matches follow in the order they were chosen by,
and every match is still counted."""

from __future__ import annotations

from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, text

from tests.helpers import statements_run, write_files
from weaver.cache import fts, pg_search, read
from weaver.cache.db import alembic_config, open_engine
from weaver.runtime.app import App


def index(app: App, files: dict[str, str | bytes]) -> None:
    write_files(app.settings.vault, files)
    app.indexer.reconcile()


def search(engine: Engine, query: str, limit: int = 20, offset: int = 0) -> fts.SearchPage:
    expression = fts.fts_query(query)
    assert expression is not None
    with read.read_snapshot(engine) as conn:
        return fts.search(conn, expression, limit, offset)


def paths(page: fts.SearchPage) -> list[str]:
    return [hit.path for hit in page.hits]


@pytest.mark.parametrize(
    ("query", "any_terms"),
    [
        ("summary create", "'summary' | 'create'"),
        ('"summary create" plan', "'summary create' | 'plan'"),
        ("migr*", "'migr':*"),
        ("alpha OR beta -draft", "'alpha' | 'beta'"),
        ("alpha NOT beta NOT gamma", "'alpha'"),
        ("C++ it's", "'C' | 'it s'"),
    ],
)
def test_candidates_are_chosen_by_any_wanted_term(query: str, any_terms: str) -> None:
    expression = fts.fts_query(query)
    assert expression is not None
    assert pg_search.any_term_text(expression) == any_terms


@pytest.mark.postgres
def test_a_note_named_for_a_common_word_ranks_first_among_many_mentioning_it(
    pg_app: App,
) -> None:
    """More notes mention the word than are ranked in full, each of them more often than the
    note named for it: the name still wins, with no pinning by the caller."""
    notes: dict[str, str | bytes] = {
        f"mentions/n{i:03}.md": f"Bread again: bread, bread and bread {i}.\n" for i in range(260)
    }
    # Last by path, longest body: only its name brings it among the candidates.
    notes["zz/Bread.md"] = "Flour, water, salt and time to knead them all together; bread once.\n"
    index(pg_app, notes)
    assert pg_search.RANK_CANDIDATES < 261
    page = search(pg_app.db, "bread")
    assert page.total == 261
    assert paths(page)[0] == "zz/Bread.md"
    assert page.hits[0].score > page.hits[1].score
    assert "<mark>bread</mark>" in page.hits[1].snippet.lower()


def full_ranking(engine: Engine, query: str) -> list[str]:
    """Every match by `ts_rank_cd` over its whole document, as before candidates were chosen."""
    expression = fts.fts_query(query)
    assert expression is not None
    with engine.connect() as conn:
        return list(
            conn.execute(
                text(
                    "SELECT note_path FROM note_texts, to_tsquery('weaver_search', :q) q "
                    "WHERE document @@ q ORDER BY ts_rank_cd(CAST(:w AS real[]), document, q) "
                    "DESC, note_path"
                ),
                {"q": pg_search.to_tsquery_text(expression), "w": pg_search.RANK_WEIGHTS},
            ).scalars()
        )


@pytest.mark.postgres
def test_notes_mentioning_a_word_most_are_its_best_not_the_shortest(
    pg_app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More short notes mention the word once than are ranked in full; the notes that
    mention it most are longer. They are the full ranking's best, and come first."""
    monkeypatch.setattr(pg_search, "RANK_CANDIDATES", 20)
    notes: dict[str, str | bytes] = {f"once/n{i:03}.md": f"Kiln {i} fired.\n" for i in range(150)}
    for i in range(10):
        notes[f"often/m{i}.md"] = "glaze and clay " * (8 + i) + "kiln, " * (3 + i) + f"{i}\n"
    assert max(len(body) for body in notes.values()) < pg_search.LEAD_CHARS
    notes["long.md"] = "pottery wheel " * 4000  # no kiln: its lead is the start alone
    index(pg_app, notes)
    with pg_app.db.connect() as conn:
        lead_bytes = conn.execute(
            text("SELECT pg_column_size(lead) FROM note_texts WHERE note_path = 'long.md'")
        ).scalar_one()
    assert lead_bytes < 2 * pg_search.LEAD_CHARS
    full = full_ranking(pg_app.db, "kiln")
    assert all(path.startswith("often/") for path in full[:10])
    page = search(pg_app.db, "kiln", limit=10)
    assert page.total == 160
    assert paths(page) == full[:10]
    with read.read_snapshot(pg_app.db) as conn:
        expression = fts.fts_query("kiln")
        assert expression is not None
        assert fts.ranked_paths(conn, expression, 160) == full


@pytest.mark.postgres
def test_pages_past_the_candidates_neither_overlap_nor_skip(
    pg_app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_search, "RANK_CANDIDATES", 7)
    # Bodies of different lengths and counts of the word: the ranking is not the path order.
    notes: dict[str, str | bytes] = {
        f"n{i:02}.md": "shared " * (1 + i % 4) + "filler " * (i % 7) + "\n" for i in range(30)
    }
    notes["Shared.md"] = "# Shared\nonce shared\n"
    index(pg_app, notes)
    pages = [search(pg_app.db, "shared", limit=5, offset=o) for o in range(0, 35, 5)]
    assert {page.total for page in pages} == {31}
    listed = [path for page in pages for path in paths(page)]
    assert sorted(listed) == sorted(notes)
    assert listed[0] == "Shared.md"
    # A page that straddles the candidates' end, and the ranked order within them.
    straddling = search(pg_app.db, "shared", limit=6, offset=4)
    assert paths(straddling) == listed[4:10]
    ranked = [hit.score for hit in pages[0].hits] + [hit.score for hit in pages[1].hits[:2]]
    assert ranked == sorted(ranked, reverse=True)
    expression = fts.fts_query("shared")
    assert expression is not None
    with read.read_snapshot(pg_app.db) as conn:
        assert fts.ranked_paths(conn, expression, 31) == listed
        assert fts.ranked_paths(conn, expression, 9) == listed[:9]


@pytest.mark.postgres
def test_a_phrase_is_checked_and_counted_in_one_pass(pg_app: App) -> None:
    """The index cannot check a phrase: each note holding both words is read to check it,
    once, the page's statement counting the matches as it goes."""
    notes: dict[str, str | bytes] = {
        f"n{i:02}.md": ("create a summary\n" if i % 3 else "summary create\n") for i in range(30)
    }
    index(pg_app, notes)
    with statements_run(pg_app.db) as statements:
        page = search(pg_app.db, '"summary create"', limit=4)
    assert page.total == 10
    assert len(page.hits) == 4
    assert all("<mark>summary</mark> <mark>create</mark>" in hit.snippet for hit in page.hits)
    counts = [sql for sql in statements if "count(*) AS" in sql.replace("count(*) OVER", "")]
    assert counts == []
    # Words, not a phrase: the index checks them, and counts them when the page is full.
    with statements_run(pg_app.db) as statements:
        words = search(pg_app.db, "summary create", limit=4)
    assert words.total == 30
    assert [sql for sql in statements if "count(*) OVER" in sql] == []
    assert len([sql for sql in statements if "count(*) AS" in sql]) == 1


@pytest.mark.postgres
def test_0018_fills_heads_and_downgrades(postgres_empty_url: str) -> None:
    engine = open_engine(postgres_empty_url)
    config = alembic_config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0017")
        conn.execute(text("SET LOCAL session_replication_role = replica"))  # no notes rows
        conn.execute(
            text(
                "INSERT INTO note_texts (note_path, front, body, document) VALUES "
                "('a.md', '', 'body words', setweight(to_tsvector('weaver_search', 'Alpha'), 'A')"
                " || setweight(to_tsvector('weaver_search', 'Heading'), 'C')"
                " || setweight(to_tsvector('weaver_search', 'body words'), 'D'))"
            )
        )
        command.upgrade(config, "0018")
        head, lead = conn.execute(text("SELECT head::text, lead::text FROM note_texts")).one()
        assert head == "'alpha':1A 'head':2C"
        assert lead == "'alpha':1A 'bodi':3 'head':2C 'word':4"
        storage: dict[str, str] = dict(
            conn.execute(
                text(
                    "SELECT attname, attstorage FROM pg_attribute "
                    "WHERE attrelid = 'note_texts'::regclass AND attnum > 0"
                )
            ).all()
        )
        assert [storage[c] for c in ("note_path", "head", "lead", "document")] == [
            "p",
            "m",
            "m",
            "e",
        ]
        command.downgrade(config, "0017")
        columns = conn.execute(
            text(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'note_texts' ORDER BY ordinal_position"
            )
        ).scalars()
        assert list(columns) == ["note_path", "front", "body", "document"]
        options = conn.execute(
            text("SELECT reloptions FROM pg_class WHERE relname = 'note_texts'")
        ).scalar_one()
        assert options is None
    engine.dispose()


def test_a_failed_search_reports_its_own_error(
    pg_app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A statement that fails (here a column gone; a deadline's timeout alike) is the error the
    caller sees, not "current transaction is aborted" from putting the scan setting back."""
    from sqlalchemy.exc import ProgrammingError

    index(pg_app, {"a.md": "alpha\n"})

    def broken(conn: Any, *_args: Any) -> list[Any]:
        return list(conn.execute(text("SELECT no_such_column FROM note_texts")).all())

    monkeypatch.setattr(pg_search, "_page_rows", broken)
    with pytest.raises(ProgrammingError, match="no_such_column"):
        search(pg_app.db, "alpha")
