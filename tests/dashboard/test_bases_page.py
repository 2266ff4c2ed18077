"""The dashboard's bases pages over real HTTP: the vault's bases listed with a link to each
view, a table view with its display names as headers, rows in the view's order, group
headings and summaries, values escaped, and a view Weaver cannot evaluate shown as an error
naming the expression (never an empty table)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.dashboard.server import Served, serve_dashboard
from tests.helpers import write_files
from tests.mcp_server.test_base_tools import FILES, book

VAULT = FILES | {"Books/Evil.md": book("<script>window.__pwned = 1</script>", 2, "read", 10)}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = write_files(tmp_path_factory.mktemp("bases") / "vault", VAULT)
    with serve_dashboard(root) as server:
        yield server


def view_url(path: str, view: str) -> str:
    return f"/bases/view?path={quote(path)}&view={quote(view)}"


def test_the_bases_page_lists_each_base_with_its_views(served: Served) -> None:
    reply = served.get("/bases")
    assert reply.status == 200
    assert '<a href="/bases" class="current">Bases</a>' in reply.body
    assert "3 bases" in reply.body
    assert f'href="{view_url("Library.base", "By status").replace("&", "&amp;")}"' in reply.body
    assert "Home.md" in reply.body and "block 0, line 2" in reply.body


def test_a_table_view_shows_rows_in_order_under_display_names(served: Served) -> None:
    reply = served.get(view_url("Library.base", "By rating"))
    assert reply.status == 200
    headers = re.findall(r"<th>(.*?)</th>", reply.body)
    assert "Author" in headers
    body = reply.body
    assert body.index("Herbert") < body.index("Austen") < body.index("Tolkien")
    assert "<script>window" not in body and "&lt;script&gt;window.__pwned" in body
    assert 'id="base-summaries"' in body
    assert f'href="/notes/{quote("Books/Dune.md")}"' in body


def test_a_grouped_view_shows_group_headings(served: Served) -> None:
    body = served.get(view_url("Library.base", "By status")).body
    headings = [re.sub(r"\s*<span.*", "", h) for h in re.findall(r"<h2>(.*?)</h2>", body)]
    assert headings == ["read", "reading", "unread"]


def test_a_view_it_cannot_evaluate_is_an_error_naming_the_expression(served: Served) -> None:
    reply = served.get(view_url("Library.base", "Broken"))
    assert reply.status == 400
    assert "rating.lower()" in reply.body and "<table" not in reply.body
