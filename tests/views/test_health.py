"""Broken link targets with the notes holding them, orphans and shared file names, read off the
link graph, in pages with their totals."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cache.test_vault_health import FILES
from tests.helpers import indexed_app
from weaver.cache import read
from weaver.cache.graph import load_graph
from weaver.paging import page_of
from weaver.views import health
from weaver.views.link_graph import Graph


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graph]:
    with (
        indexed_app(tmp_path_factory.mktemp("health") / "vault", FILES) as app,
        read.read_snapshot(app.db) as conn,
    ):
        yield load_graph(conn)


def test_broken_targets_linked_from_most_notes_first_with_those_notes(graph: Graph) -> None:
    page = page_of(health.broken_targets(graph), 0, 10)
    assert page.total == 3
    first, second, third = page.items
    assert (first.target, first.sources, first.source_total) == (
        "Missing",
        ("Home.md", "a/Topic.md"),
        2,
    )
    assert (second.target, second.sources) == ("Gone", ("Home.md",))
    assert (third.target, third.sources) == ("Nowhere", ("z/Also alone.md",))
    assert not page.has_more


def test_pages_go_on_where_the_last_ended(graph: Graph) -> None:
    page = page_of(health.broken_targets(graph), 1, 1)
    assert [b.target for b in page.items] == ["Gone"]
    assert (page.total, page.has_more) == (3, True)


def test_orphans_have_no_link_to_or_from_another_note(graph: Graph) -> None:
    alone = ["Broken yaml.md", "a/Lonely.md", "b/Lonely.md", "z/Also alone.md"]
    assert health.orphans(graph) == alone


def test_shared_names_list_every_note_that_has_one(graph: Graph) -> None:
    (shared,) = health.shared_names(graph)
    assert (shared.name, shared.paths, shared.total) == (
        "lonely.md",
        ("a/Lonely.md", "b/Lonely.md"),
        2,
    )
