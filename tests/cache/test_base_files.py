"""The files a base sees, from an indexed vault: notes and attachments with their facts
(tags, links, backlinks, embeds, properties, times), and the narrowing in SQL proven exact:
for every filter, the view over the narrowed files equals the view evaluated over every file,
rows and errors alike (a condition SQL decides never hides another's error)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from tests.helpers import write_files
from weaver.bases.document import document_from_query, view_of
from weaver.bases.environment import Environment
from weaver.bases.filters import all_of
from weaver.bases.view import run_view
from weaver.cache import base_files
from weaver.cache.base_files import file_at, file_finder, load_files
from weaver.cache.read import read_snapshot
from weaver.config import Settings
from weaver.errors import BaseExpressionError
from weaver.runtime.app import App, open_app
from weaver.runtime.base_views import AD_HOC, run_document

FILES: dict[str, str | bytes] = {
    "Books/Dune.md": "---\ntags: [book/scifi]\nrating: 5\n---\nSee [[Emma]] and ![[cover.png]].\n",
    "Books/Emma.md": "---\nrating: 4\n---\nA #Book about [[Dune]].\n",
    "Books/Old/Ulysses.MD": "---\nrating: 2\ntags: book\n---\nold\n",
    "Booksellers/Shop.md": "---\nrating: 3\n---\n#bookish shop\n",
    "Books/cover.png": b"\x89PNG fake",
    "Notes/Idea.md": "---\nrating: high\n---\nAn #idea, [[Dune]].\n",
    "Root.md": "#book at the root\n",
}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    root = write_files(tmp_path_factory.mktemp("bases") / "vault", FILES)
    opened = open_app(Settings(vault=root))
    opened.indexer.reconcile()
    yield opened
    opened.close()


def narrowed_rows(app: App, filter: object) -> list[str]:
    document = document_from_query(filter, None, None, ["file.path"], None, None)
    with read_snapshot(app.db) as conn:
        run = run_document(conn, AD_HOC, document, view_of(document, None))
    return sorted(row.path for row in run.result.rows)


def evaluated_rows(app: App, filter: object) -> list[str]:
    """The same view with nothing decided in SQL: every file, every filter evaluated."""
    document = document_from_query(filter, None, None, ["file.path"], None, None)
    view = view_of(document, None)
    with read_snapshot(app.db) as conn:
        files = load_files(conn, None).files
        env = Environment(now=dt.datetime.now(), find_file=file_finder(conn))
        result = run_view(document, view, files, env)
    assert all_of(document.filters, view.filters) is not None
    return sorted(row.path for row in result.rows)


def outcome(rows: object) -> object:
    try:
        return rows() if callable(rows) else rows
    except BaseExpressionError as exc:
        return ("error", exc.expression, exc.position)


FILTERS: list[object] = [
    'file.hasTag("book")',
    'file.hasTag("#BOOK")',
    'file.hasTag("book/scifi", "idea")',
    'file.hasTag("boo")',
    'file.inFolder("Books")',
    'file.inFolder("Books/")',
    'file.inFolder("Books/Old")',
    'file.inFolder("Book")',
    'file.inFolder("")',
    'file.ext == "md"',
    '"png" == file.ext',
    'file.ext == "png"',
    'file.inFolder("Books") && file.hasTag("book")',
    'file.inFolder("Books") && rating >= 4',
    {"and": ['file.hasTag("book")', "rating > 3"]},
    {"and": ["rating > 3", 'file.hasTag("book")']},
    {"and": [{"or": ['file.hasTag("idea")', 'file.inFolder("Books")']}, 'file.ext == "md"']},
    {"not": ['file.hasTag("book")']},
    {"and": ['file.inFolder("Books")', {"not": ['file.hasTag("book")']}]},
]


@pytest.mark.parametrize("filter", FILTERS, ids=str)
def test_narrowing_gives_what_evaluating_every_file_gives(app: App, filter: object) -> None:
    assert outcome(lambda: narrowed_rows(app, filter)) == outcome(
        lambda: evaluated_rows(app, filter)
    )


def test_the_cases_that_matter_read_as_obsidian_reads_them(app: App) -> None:
    assert narrowed_rows(app, 'file.hasTag("book")') == [
        "Books/Dune.md",
        "Books/Emma.md",
        "Books/Old/Ulysses.MD",
        "Root.md",
    ]
    assert narrowed_rows(app, 'file.inFolder("Books")') == [
        "Books/Dune.md",
        "Books/Emma.md",
        "Books/Old/Ulysses.MD",
        "Books/cover.png",
    ]
    assert "Books/Old/Ulysses.MD" not in narrowed_rows(app, 'file.ext == "md"')


def test_a_condition_sql_decides_never_hides_an_earlier_ones_error(app: App) -> None:
    # `rating > 3` runs first for every file; Idea's rating is text: the view fails, as it
    # does when every file is evaluated, though Idea is no book.
    broken = {"and": ["rating > 3", 'file.hasTag("book")']}
    assert outcome(lambda: narrowed_rows(app, broken))[0] == "error"  # type: ignore[index]
    # Books first: Idea is dropped before its rating is read, with or without SQL.
    assert narrowed_rows(app, {"and": ['file.hasTag("book")', "rating > 3"]}) == [
        "Books/Dune.md",
        "Books/Emma.md",
    ]


def test_a_files_facts_come_from_the_cache(app: App) -> None:
    with read_snapshot(app.db) as conn:
        dune = file_at(conn, "Books/Dune.md")
        cover = file_at(conn, "Books/cover.png")
        find = file_finder(conn)
        assert dune is not None and cover is not None
        assert (dune.name, dune.folder, dune.ext) == ("Dune.md", "Books", "md")
        assert list(dune.tags) == ["book/scifi"]
        assert list(dune.links) == ["Books/Emma.md"]
        assert list(dune.embeds) == ["Books/cover.png"]
        assert sorted(dune.backlinks) == ["Books/Emma.md", "Notes/Idea.md"]
        assert dune.properties == {"tags": ["book/scifi"], "rating": 5}
        assert (cover.ext, cover.folder, list(cover.tags), cover.properties) == (
            "png",
            "Books",
            [],
            {},
        )
        assert isinstance(dune.mtime, dt.datetime) and dune.mtime.tzinfo is None
        assert cover.size == len(b"\x89PNG fake")
        found = find("[[Emma|the novel]]")
        assert found is not None and found.path == "Books/Emma.md"
        assert find("No such note") is None


def test_every_file_is_loaded_without_filters(app: App) -> None:
    with read_snapshot(app.db) as conn:
        narrowed = load_files(conn, None)
    assert sorted(f.path for f in narrowed.files) == sorted(FILES)
    assert narrowed.rest is None


def test_an_attachment_in_a_view_has_its_backlinks(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Listed with the notes, the attachment's backlinks are read with theirs, in one statement
    # (as for a big vault: files are read by their paths only when there are few).
    monkeypatch.setattr(base_files, "_FEW", 0)
    document = document_from_query(
        'file.inFolder("Books")', None, None, ["file.backlinks"], None, None
    )
    with read_snapshot(app.db) as conn:
        run = run_document(conn, AD_HOC, document, view_of(document, None))
    cells = {row.path: row.cells[0] for row in run.result.rows}
    assert [link.target for link in cells["Books/cover.png"]] == ["Books/Dune.md"]  # type: ignore[union-attr]
