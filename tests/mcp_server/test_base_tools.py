"""list_bases, query_base and query_notes through the SDK's client on an indexed vault: a
`.base` file's views (sorted, grouped, summarised, with display names), a note's ```base block
with `this`, a view whose expression Weaver cannot evaluate answered as an error naming it,
ad-hoc questions in the same language, paging, and the `weaver://base/` resource with a
subscriber told when the view's rows change (and only then)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from tests.mcp_server.test_task_resources import updates_heard
from weaver.config import Settings
from weaver.mcp_server.base_resources import base_uri

pytestmark = pytest.mark.anyio


def book(author: str, rating: int, status: str, pages: int, tags: str = "book") -> str:
    return (
        f"---\ntags: [{tags}]\nauthor: {author}\nrating: {rating}\nstatus: {status}\n"
        f"pages: {pages}\n---\nA book.\n"
    )


LIBRARY = """filters:
  and:
    - file.hasTag("book")
formulas:
  per_star: "(pages / rating).round(1)"
properties:
  note.author:
    displayName: Author
views:
  - type: table
    name: By rating
    order: [file.name, note.author, note.rating, formula.per_star]
    sort:
      - property: note.rating
        direction: DESC
    summaries:
      note.rating: Average
  - type: table
    name: By status
    groupBy:
      property: note.status
      direction: ASC
    order: [file.name, note.status]
  - type: cards
    name: Broken
    filters: 'rating.lower() == "x"'
  - type: table
    name: Typo
    filters: 'rating.frobnicate()'
"""

HOME = """# Home
```base
filters: 'file.inFolder("Books") && rating >= 4 && file.name != this.file.name'
views:
  - type: table
    name: Good
    order: [file.name]
```
"""

FILES: dict[str, str | bytes] = {
    "Books/Dune.md": book("Herbert", 5, "read", 412),
    "Books/Emma.md": book("Austen", 4, "reading", 474),
    "Books/Hobbit.md": book("Tolkien", 3, "unread", 310, "book, fantasy"),
    "Notes/Idea.md": "An #idea about [[Dune]].\n",
    "Library.base": LIBRARY,
    "Home.md": HOME,
    "Broken.base": "views: [oops\n",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(tmp_path: Any) -> Iterator[Served]:
    root = write_files(tmp_path / "vault", FILES)
    served = serve(Settings(vault=root))
    yield served
    served.app.close()


@pytest.fixture
async def tools(served: Served) -> AsyncIterator[Tools]:
    async with Client(served.server) as client:
        yield Tools(client)


def names(data: dict[str, Any]) -> list[str]:
    return [row["path"].rsplit("/", 1)[-1] for row in data["rows"]]


async def test_list_bases_names_files_and_blocks_with_their_views(tools: Tools) -> None:
    data = await tools.ok("list_bases")
    listed = {(b["path"], b["block"]): b for b in data["bases"]}
    assert set(listed) == {("Broken.base", None), ("Library.base", None), ("Home.md", 0)}
    library = listed[("Library.base", None)]
    assert [v["name"] for v in library["views"]] == ["By rating", "By status", "Broken", "Typo"]
    assert library["views"][2]["type"] == "cards" and library["error"] is None
    assert "frobnicate" in library["views"][3]["error"]
    assert listed[("Home.md", 0)]["line"] == 2
    assert listed[("Broken.base", None)]["error"]  # why it cannot be read, not left out
    assert data["total"] == 3


async def test_the_first_view_sorted_with_display_names_formulas_and_summaries(
    tools: Tools,
) -> None:
    data = await tools.ok("query_base", path="Library.base")
    assert data["views"] == ["By rating", "By status", "Broken", "Typo"]
    assert data["view"] == "By rating"
    keys = [c["key"] for c in data["columns"]]
    assert keys == ["file.name", "note.author", "note.rating", "formula.per_star"]
    assert data["columns"][1]["label"] == "Author"
    assert names(data) == ["Dune.md", "Emma.md", "Hobbit.md"]
    assert [row["values"][1:] for row in data["rows"]] == [
        ["Herbert", 5, 82.4],
        ["Austen", 4, 118.5],
        ["Tolkien", 3, 103.3],
    ]
    assert data["summaries"] == {"note.rating": 4}
    assert data["total"] == 3 and data["hasMore"] is False and data["groups"] is None


async def test_a_grouped_view_gives_each_group_its_rows(tools: Tools) -> None:
    data = await tools.ok("query_base", path="Library.base", view="By status")
    groups = [(g["key"], g["start"], g["count"]) for g in data["groups"]]
    assert groups == [("read", 0, 1), ("reading", 1, 1), ("unread", 2, 1)]
    assert names(data) == ["Dune.md", "Emma.md", "Hobbit.md"]


async def test_a_block_sees_this_as_the_note_holding_it(tools: Tools) -> None:
    data = await tools.ok("query_base", path="Home.md")
    assert data["block"] == 0 and data["view"] == "Good"
    assert sorted(names(data)) == ["Dune.md", "Emma.md"]


async def test_an_expression_weaver_cannot_evaluate_fails_the_view_naming_it(
    tools: Tools,
) -> None:
    error = await tools.error("query_base", path="Library.base", view="Broken")
    assert "rating.lower()" in error and "at " in error
    assert "no view" in (await tools.error("query_base", path="Library.base", view="Nope"))
    # A view calling a function no type has fails alone: the base's other views still run.
    assert "unknown function 'frobnicate'" in (
        await tools.error("query_base", path="Library.base", view="Typo")
    )
    missing = await tools.error("query_base", path="Home.md", block=3)
    assert "1 base block" in missing


async def test_pages_say_where_the_rest_is(tools: Tools) -> None:
    first = await tools.ok("query_base", path="Library.base", limit=2)
    assert names(first) == ["Dune.md", "Emma.md"] and first["hasMore"] is True
    assert "offset 2" in first["hint"]
    rest = await tools.ok("query_base", path="Library.base", limit=2, offset=2)
    assert names(rest) == ["Hobbit.md"] and rest["hasMore"] is False


async def test_query_notes_asks_without_a_file(tools: Tools) -> None:
    data = await tools.ok(
        "query_notes",
        filter={"and": ['file.inFolder("Books")', {"not": ['file.hasTag("fantasy")']}]},
        formulas={"short": "pages < 450"},
        sort=[{"property": "note.pages", "direction": "ASC"}],
    )
    assert names(data) == ["Dune.md", "Emma.md"]
    keys = [c["key"] for c in data["columns"]]
    assert keys == ["file.name", "note.pages", "formula.short"]
    assert [row["values"][2] for row in data["rows"]] == [True, False]
    assert data["path"] is None and data["views"] == []
    error = await tools.error("query_notes", filter="rating >")
    assert "rating >" in error
    assert "give a filter" in await tools.error("query_notes")


async def test_the_resource_reads_a_view_and_tells_subscribers_when_its_rows_change(
    served: Served,
) -> None:
    heard, changed, on_message = updates_heard()
    uri = base_uri("Library.base", "By rating")
    async with Client(served.server, mode="legacy", message_handler=on_message) as client:
        contents = (await client.read_resource(uri)).contents[0]
        body = json.loads(contents.text)  # type: ignore[union-attr]
        assert body["rows"][0]["path"] == "Books/Dune.md"
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(uri)
        # A note outside the base changes: its rows read the same, nothing is sent.
        (served.root / "Notes/Idea.md").write_text("Another #idea.\n", encoding="utf-8")
        await anyio.to_thread.run_sync(served.app.indexer.apply_paths, ["Notes/Idea.md"])
        await anyio.sleep(1.0)
        assert heard == []
        (served.root / "Books/Emma.md").write_text(book("Austen", 5, "read", 474))
        await anyio.to_thread.run_sync(served.app.indexer.apply_paths, ["Books/Emma.md"])
        with anyio.fail_after(5):
            await changed.wait()
        assert heard == [uri]
        again = json.loads((await client.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
        assert again["summaries"] == {"note.rating": 13 / 3}
