"""Search stays bounded whatever the note: a query word on every line of a 4 MiB note costs
about what it costs once, and no input text reaches SQLite as an error."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Connection

from tests.helpers import WriteNotes
from weaver.cache import fts
from weaver.runtime.app import App

LINE = "the quick brown fox jumps over the lazy dog and a widget here\n"


@contextmanager
def counted_steps(conn: Connection) -> Iterator[list[int]]:
    """SQLite virtual-machine steps (in thousands) spent in the block: a measure of work
    that does not depend on the machine's speed."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    raw: Any = conn.connection.driver_connection
    raw.set_progress_handler(tick, 1000)
    try:
        yield steps
    finally:
        raw.set_progress_handler(None, 0)


def search(app: App, words: str) -> tuple[fts.SearchPage, int]:
    expression = fts.fts_query(words)
    assert expression is not None
    with app.db.connect() as conn, counted_steps(conn) as steps:
        page = fts.search(conn, expression, 10, 0)
    return page, steps[0]


def test_a_word_on_every_line_of_a_big_note_is_cheap(app: App, write_notes: WriteNotes) -> None:
    big = "".join(f"{i} {LINE}" for i in range(58_000))  # ~3.5 MiB, the word 58,000 times
    once = "".join(f"{i} {LINE.replace('widget', 'gadget')}" for i in range(58_000))
    write_notes({"big.md": big, "once.md": once + "one widget at the end\n", "small.md": LINE})
    app.indexer.reconcile()
    page, steps = search(app, "widget")
    assert sorted(hit.path for hit in page.hits) == ["big.md", "once.md", "small.md"]
    snippets = {hit.path: hit.snippet for hit in page.hits}
    assert "<mark>widget</mark>" in snippets["big.md"]
    assert "<mark>widget</mark>" in snippets["once.md"]
    assert snippets["small.md"].count("<mark>widget</mark>") == 1  # FTS5's own snippet
    # FTS5's snippet() over big.md alone takes hundreds of millions of steps.
    assert steps < 50_000


def test_the_bounded_snippet_marks_stems_and_says_where_it_cuts() -> None:
    body = "intro " * 50 + "Running fast, the runner runs." + " outro" * 50
    expression = fts.fts_query("running")
    assert expression is not None
    snippet = fts.bounded_snippet(body, expression)
    assert snippet.startswith("…") and snippet.endswith("…")
    assert "<mark>Running</mark>" in snippet and "<mark>runs</mark>" in snippet
    assert len(snippet.split()) <= fts.SNIPPET_TOKENS + 2


def test_the_bounded_snippet_marks_cjk_characters_wherever_they_stand() -> None:
    """Chinese is written without spaces: `插件` inside a run of characters is still a hit
    (PostgreSQL's snippets, and SQLite's of big notes, come from here)."""
    expression = fts.fts_query("插件 system")
    assert expression is not None
    snippet = fts.bounded_snippet("Obsidian的插件system和标签。安装插件以后重启", expression)
    assert snippet.startswith("Obsidian的<mark>插</mark><mark>件</mark>")
    assert snippet.endswith("安装<mark>插</mark><mark>件</mark>以后重启")
    assert "标签" in snippet  # a character that is not in the query stays unmarked


@pytest.mark.parametrize("words", ["wid\x00get", "\x00", "a\x01b", "widget\x00"])
def test_control_characters_in_a_search_are_separators(app: App, words: str) -> None:
    expression = fts.fts_query(words)
    if expression is None:
        return  # nothing searchable: the tool says so, no SQL runs
    assert "\x00" not in expression
    with app.db.connect() as conn:
        fts.search(conn, expression, 10, 0)  # no OperationalError
