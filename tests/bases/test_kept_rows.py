"""Rows of base views kept between runs (`runtime.kept_rows`): a view asked again evaluates only
the files changed since, and is never stale: every answer equals the view evaluated afresh
over every file, after edits, additions, deletions, renames and at the turn of the day, and an
error is the view's exactly when it is without kept rows."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

import pytest

from tests.helpers import write_files
from weaver.bases.document import BaseDocument, ViewSpec, document_from_query, parse_base, view_of
from weaver.bases.environment import Environment
from weaver.bases.row_key import row_key
from weaver.bases.view import EvaluatedRow, ViewResult, evaluate_rows, plain, run_view
from weaver.cache.base_files import CachedFile, Narrowed, file_finder, load_files
from weaver.cache.read import read_snapshot
from weaver.config import Settings
from weaver.errors import BaseExpressionError
from weaver.runtime.app import App, open_app
from weaver.runtime.base_views import BaseSource, run_document
from weaver.runtime.kept_rows import KeptRows

FILES: dict[str, str | bytes] = {
    "Books/Dune.md": "---\nrating: 5\nread: 2024-03-01\n---\n#book [[Emma]]\n",
    "Books/Emma.md": "---\nrating: 4\nread: 2023-11-20\n---\n#book\n",
    "Books/Ulysses.md": "---\nrating: 2\n---\n#book\n",
    "Notes/Idea.md": "---\nrating: high\n---\n#idea [[Dune]]\n",
    "Books/cover.png": b"\x89PNG fake",
}
NOON = dt.datetime(2025, 6, 1, 12, 0)
BOOKS = 'file.hasTag("book")'
RATED_BOOKS = """filters:
  and:
    - file.hasTag("book")
    - rating >= 3
formulas:
  stars: rating * 2
  days: ((today() - read) / 86400000).round()
properties:
  formula.stars:
    displayName: Stars
summaries:
  Total: values.reduce(acc + value, 0)
views:
  - type: table
    name: Rated
    order: [file.name, rating, formula.stars, formula.days]
    sort:
      - property: formula.stars
        direction: DESC
    summaries:
      formula.stars: Total
  - type: table
    name: By folder
    groupBy:
      property: file.folder
      direction: ASC
    summaries:
      rating: Average
"""


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    opened = open_app(Settings(vault=write_files(tmp_path / "vault", FILES)))
    opened.indexer.reconcile()
    yield opened
    opened.close()


def edit(app: App, path: str, text: str | None) -> None:
    """Write (or with None, delete) a vault file and bring the cache in step."""
    target = app.vault.root / path
    if text is None:
        target.unlink()
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    app.indexer.reconcile()


def answer(result: ViewResult) -> object:
    groups = [
        (plain(group.key), group.start, group.count, plain(dict(group.summaries)))
        for group in result.groups or ()
    ]
    rows = [(row.path, plain(list(row.cells))) for row in result.rows]
    return rows, groups, plain(dict(result.summaries)), result.matched


def kept_answer(app: App, document: BaseDocument, view: str | None, now: dt.datetime) -> object:
    """The view as the tools run it (kept rows used), or its error."""
    try:
        with read_snapshot(app.db) as conn:
            run = run_document(conn, BASE, document, view_of(document, view), now)
    except BaseExpressionError as exc:
        return ("error", exc.expression, exc.position)
    return answer(run.result)


def fresh_answer(app: App, document: BaseDocument, view: str | None, now: dt.datetime) -> object:
    """The same view with nothing kept or narrowed: every file evaluated."""
    try:
        with read_snapshot(app.db) as conn:
            files = load_files(conn, None).files
            env = Environment(now=now, find_file=file_finder(conn, BASE.path))
            result = run_view(document, view_of(document, view), files, env)
    except BaseExpressionError as exc:
        return ("error", exc.expression, exc.position)
    return answer(result)


BASE = BaseSource("Rated.base", None, RATED_BOOKS)


def assert_fresh(app: App, document: BaseDocument, view: str | None = None) -> object:
    kept = kept_answer(app, document, view, NOON)
    assert kept == fresh_answer(app, document, view, NOON)
    return kept


def test_every_answer_equals_the_view_evaluated_afresh_through_edits(app: App) -> None:
    document = parse_base(RATED_BOOKS)
    for view in ("Rated", "By folder"):
        assert_fresh(app, document, view)
    before = assert_fresh(app, document, "Rated")
    assert before[0][0] == ("Books/Dune.md", ["Dune.md", 5, 10, 457])  # type: ignore[index]

    edit(app, "Books/Emma.md", "---\nrating: 1\n---\n#book\n")  # now filtered out
    edit(app, "Books/Ulysses.md", "---\nrating: 3\n---\n#book\n")  # now kept
    edit(app, "Books/New.md", "---\nrating: 4.5\nread: 2025-05-31\n---\n#book/scifi\n")
    (app.vault.root / "Books/Dune.md").rename(app.vault.root / "Books/Arrakis.md")
    app.indexer.reconcile()
    for view in ("Rated", "By folder"):
        assert_fresh(app, document, view)
    rows = assert_fresh(app, document, "Rated")[0]  # type: ignore[index]
    assert [path for path, _ in rows] == ["Books/Arrakis.md", "Books/New.md", "Books/Ulysses.md"]

    edit(app, "Books/New.md", None)
    assert [p for p, _ in assert_fresh(app, document, "Rated")[0]] == [  # type: ignore[index]
        "Books/Arrakis.md",
        "Books/Ulysses.md",
    ]


def test_a_view_of_notes_and_attachments_follows_both(app: App) -> None:
    document = document_from_query(
        'file.inFolder("Books")', {"kb": "file.size / 1000"}, None, ["formula.kb"], None, None
    )
    assert_fresh(app, document)
    (app.vault.root / "Books/cover.png").write_bytes(b"\x89PNG bigger than before")
    (app.vault.root / "Books/back.png").write_bytes(b"\x89PNG")
    edit(app, "Books/Emma.md", "---\nrating: 4\n---\n#book, longer now\n")
    rows = dict(assert_fresh(app, document)[0])  # type: ignore[index]
    assert rows["Books/cover.png"] == [0.023] and "Books/back.png" in rows
    (app.vault.root / "Books/back.png").unlink()
    edit(app, "Books/Dune.md", None)
    rows = dict(assert_fresh(app, document)[0])  # type: ignore[index]
    assert "Books/back.png" not in rows and "Books/Dune.md" not in rows


def test_a_formula_of_today_is_evaluated_again_the_next_day(app: App) -> None:
    document = parse_base(RATED_BOOKS)
    view = view_of(document, "Rated")
    with read_snapshot(app.db) as conn:
        today = run_document(conn, BASE, document, view, NOON).result
        tomorrow = run_document(conn, BASE, document, view, NOON + dt.timedelta(days=1)).result
    assert (today.rows[0].cells[3], tomorrow.rows[0].cells[3]) == (457, 458)


def test_a_file_changed_in_place_with_the_same_size_is_evaluated_again(app: App) -> None:
    document = document_from_query('file.hasTag("book")', None, None, ["rating"], None, None)
    assert_fresh(app, document)
    path = app.vault.root / "Books/Ulysses.md"
    stat = path.stat()
    path.write_text(path.read_text().replace("rating: 2", "rating: 7"), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and time, new content
    app.indexer.reconcile(full=True)
    rows = assert_fresh(app, document)[0]  # type: ignore[index]
    assert ("Books/Ulysses.md", [7]) in rows


def test_a_touched_note_shows_its_new_time(app: App) -> None:
    document = document_from_query(BOOKS, None, None, ["file.mtime"], None, None)
    before = assert_fresh(app, document)
    path = app.vault.root / "Books/Emma.md"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 86_400 * 10**9))  # a day later
    app.indexer.reconcile()
    assert assert_fresh(app, document) != before


# ------------------------------------------------------------------ errors

ROUNDED = {"r": "rating.round()"}


def test_an_error_in_a_row_the_view_does_not_show_leaves_the_answer_as_it_was(app: App) -> None:
    # `rating.round()` fails for Idea (its rating is text); sorted by name and cut to one row,
    # the view shows Dune alone and reads no cell of Idea's, kept rows or not.
    by_name = [{"property": "file.name", "direction": "ASC"}]
    one = document_from_query('file.ext == "md"', ROUNDED, by_name, ["formula.r"], None, 1)
    assert assert_fresh(app, one)[0] == [("Books/Dune.md", [5])]  # type: ignore[index]
    every = document_from_query(None, ROUNDED, None, ["formula.r"], None, None)
    failed = assert_fresh(app, every)
    assert failed == ("error", "rating.round()", 7)
    # The failure is never kept: fixed, the view answers.
    edit(app, "Notes/Idea.md", "---\nrating: 1\n---\n#idea\n")
    assert ("Notes/Idea.md", [1]) in assert_fresh(app, every)[0]  # type: ignore[index]


# ------------------------------------------------------------------ what is kept


class Counted:
    """`evaluate_rows` for one view, counting the files it is asked to evaluate."""

    def __init__(self, document: BaseDocument, view: ViewSpec, env: Environment) -> None:
        self.document, self.view, self.env = document, view, env
        self.paths: list[str] = []

    def __call__(self, files: list[CachedFile]) -> Iterable[tuple[str, EvaluatedRow | None]]:
        self.paths += [f.path for f in files]
        return evaluate_rows(self.document, self.view, files, self.env)


def kept_run(
    app: App, kept: KeptRows, document: BaseDocument, listings: list[int] | None = None
) -> list[str]:
    """The files `kept` evaluated for the view, run once (`listings` counts its listings)."""
    view = view_of(document, None)
    with read_snapshot(app.db) as conn:
        counted = Counted(document, view, Environment(now=NOON))

        def listing(notes: Collection[str] | None) -> Narrowed:
            if listings is not None:
                listings.append(len(notes) if notes is not None else -1)
            return load_files(conn, None, notes)

        kept.rows(row_key(document, view), conn, listing, counted)
    return sorted(counted.paths)


def test_a_view_asked_again_evaluates_only_the_files_changed_since(app: App) -> None:
    kept, listings = KeptRows(), list[int]()
    document = document_from_query(BOOKS + " && rating > 3", None, None, ["rating"], None, None)
    assert kept_run(app, kept, document, listings) == sorted(FILES)
    # Nothing changed in the cache: the files are not even listed.
    assert kept_run(app, kept, document, listings) == [] and listings == [-1]
    edit(app, "Books/Emma.md", "---\nrating: 9\n---\n#book\n")
    edit(app, "Notes/New.md", "new")
    # Two notes changed: those two listed again (and the attachment), not every file.
    assert kept_run(app, kept, document, listings) == ["Books/Emma.md", "Notes/New.md"]
    assert listings == [-1, 2]
    assert kept.kept() == len(FILES) + 1


def test_the_rows_kept_are_bounded_the_least_recently_used_view_going_first(
    app: App,
) -> None:
    kept = KeptRows(max_rows=len(FILES) + 2)
    first = document_from_query(BOOKS + " && rating > 3", None, None, None, None, None)
    second = document_from_query(BOOKS + " && rating > 4", None, None, None, None, None)
    kept_run(app, kept, first)
    kept_run(app, kept, second)
    assert kept.kept() == len(FILES)
    assert kept_run(app, kept, first) == sorted(FILES)  # dropped for the second: evaluated anew
    assert kept_run(app, kept, second) == sorted(FILES)


# ------------------------------------------------------------------ which views keep rows


def key_of(filter: str, column: str = "file.name") -> object:
    document = document_from_query(filter, None, None, [column], None, None)
    return row_key(document, view_of(document, None))


@pytest.mark.parametrize(
    "filter",
    [
        'file.hasTag("book") && rating > 3',
        'file.inFolder("Books") || file.hasProperty("rating")',
        'file.name.contains("e") && file.mtime > today() - "1w"',
        "note.rating == note['rating'] && file.properties.rating != null",
        'file.asLink().toString() != ""',
        "[1, 2].map(value * rating).length > 0",
    ],
)
def test_a_view_reading_its_own_file_and_the_day_keeps_its_rows(filter: str) -> None:
    assert key_of(filter) is not None


@pytest.mark.parametrize(
    "filter",
    [
        'file.hasLink("Dune")',
        "file.links.length > 0",
        "file.backlinks.length > 0",
        'file["embeds"].length > 0',
        "file.mtime > now() - '1d'",
        "file.mtime.relative() != ''",
        "this.file.name != file.name",
        "file == this",
        'link("Dune").asFile() != null',
        'file("Books/Dune.md") != null',
        "random() > 0.5",
        'link("Dune").linksTo(file)',
    ],
)
def test_a_view_reading_other_files_the_clock_or_chance_is_evaluated_afresh(
    filter: str,
) -> None:
    assert key_of(filter) is None


def test_a_column_reading_other_files_is_evaluated_afresh() -> None:
    assert key_of("rating > 3", "file.backlinks") is None
    assert key_of("rating > 3", "file.tags") is not None


def test_views_reading_backlinks_see_a_new_link_at_once(app: App) -> None:
    document = document_from_query(
        'file.inFolder("Books")', None, None, ["file.backlinks"], None, None
    )
    before = assert_fresh(app, document)
    edit(app, "Notes/Other.md", "[[Ulysses]]")
    after = assert_fresh(app, document)
    assert before != after


def test_two_caches_never_share_a_views_rows(app: App, tmp_path: Path) -> None:
    # Another vault with one more file, indexed before the first's last edit: its change log
    # reaches back past the first cache's version, but says nothing of the first cache.
    document = document_from_query(BOOKS, None, None, ["rating"], None, None)
    extra = {**FILES, "Books/Extra.md": "---\nrating: 1\n---\n#book\n"}
    other = open_app(Settings(vault=write_files(tmp_path / "other", extra)))
    try:
        other.indexer.reconcile()
        edit(app, "Books/Ulysses.md", "---\nrating: 3\n---\n#book\n")
        first = assert_fresh(app, document)
        edit(other, "Books/Emma.md", "---\nrating: 4\n---\n#book again\n")
        second = assert_fresh(other, document)
    finally:
        other.close()
    paths = sorted([path for path, _ in first[0]] + ["Books/Extra.md"])  # type: ignore[index]
    assert [path for path, _ in second[0]] == paths  # type: ignore[index]
