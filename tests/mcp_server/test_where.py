"""`query_files where=`: frontmatter properties tested through their index, every operator, with
clear errors for filters that cannot be applied; and titles as Obsidian shows them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from mcp import Client

from tests.helpers import statements_run, write_files
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from weaver.cache import property_match, read
from weaver.config import Settings
from weaver.mcp_server.where import parse_where

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

FILES: dict[str, str | bytes] = {
    "a.md": "---\npriority: 1\ndue: 2026-11-20\ntopics: [x, y]\ndone: false\n---\n",
    "b.md": "---\nPriority: 2\ndue: 2026-12-24\ntopics: [y]\ndone: true\ncover: c.png\n---\n",
    "c.md": "---\npriority: '1'\ntopics: z\nnothing:\n---\n# A heading\n",
    "d.md": "---\ntitle: '[[Home|The **Real** Title]]'\n---\n# Footer\n",
    "e.md": "no frontmatter\n\n# This note in GitHub\n",
    "f.md": "---\nscores: [1, 10]\n---\n",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def props(tmp_path_factory: pytest.TempPathFactory, module_db_url: str | None) -> Iterator[Served]:
    root = write_files(tmp_path_factory.mktemp("where") / "vault", FILES)
    served = serve(Settings(vault=root, database_url=module_db_url))
    yield served
    served.app.close()


@pytest.fixture
async def tools(props: Served) -> AsyncIterator[Tools]:
    async with Client(props.server, mode="legacy") as client:
        yield Tools(client)


async def matching(tools: Tools, where: dict[str, Any]) -> list[str]:
    data = await tools.ok("query_files", where=where)
    assert data["total"] == len(data["files"])
    return [f["path"] for f in data["files"]]


@pytest.mark.parametrize(
    ("where", "paths"),
    [
        ({"priority": 1}, ["a.md"]),  # a number, not the text '1'
        ({"PRIORITY": "1"}, ["c.md"]),  # names ignore case
        ({"priority": [1, 2]}, ["a.md", "b.md"]),
        ({"priority": {"in": ["1", 2]}}, ["b.md", "c.md"]),
        ({"priority": {"gt": 1}}, ["b.md"]),
        ({"priority": {"gte": 1, "lt": 2}}, ["a.md"]),
        ({"due": {"lt": "2026-12-01"}}, ["a.md"]),
        ({"due": {"gte": "2026-12-01"}}, ["b.md"]),
        ({"topics": {"contains": "y"}}, ["a.md", "b.md"]),
        ({"topics": "z"}, ["c.md"]),  # a scalar is a list of one
        ({"done": False}, ["a.md"]),
        ({"done": True, "topics": {"contains": "y"}}, ["b.md"]),
        ({"cover": {"exists": True}}, ["b.md"]),
        ({"cover": {"exists": False}}, ["a.md", "c.md", "d.md", "e.md", "f.md"]),
        ({"nothing": None}, ["c.md"]),
        ({"nothing": {"exists": True}}, ["c.md"]),
        ({"priority": 3}, []),
        ({"scores": {"gt": 3}}, ["f.md"]),
        ({"scores": {"gt": 3, "lt": 7}}, []),  # a range holds for one value, not across a list
        ({"topics": ["x", "y"]}, ["a.md", "b.md"]),  # a.md, holding both, counted once
        ({"topics": {"contains": "y"}, "cover": {"exists": False}}, ["a.md"]),
        ({"priority": {"gte": 1}, "topics": {"contains": "y"}, "done": False}, ["a.md"]),
        ({"due": {"lt": "2026-12-01"}, "topics": {"exists": True}}, ["a.md"]),
        (
            {"cover": {"exists": False}, "nothing": {"exists": False}},
            ["a.md", "d.md", "e.md", "f.md"],
        ),
    ],
)
async def test_where_tests_frontmatter_properties(
    tools: Tools, where: dict[str, Any], paths: list[str]
) -> None:
    assert await matching(tools, where) == paths


def test_the_narrowest_test_lists_the_notes(props: Served) -> None:
    # `topics` is on three notes, `cover` on one: `cover`'s notes are listed and each looked
    # up for `topics`, whichever the client wrote first.
    with read.read_snapshot(props.app.db) as conn:
        matched, absent = property_match.matched_notes(
            conn, parse_where({"topics": {"exists": True}, "cover": {"exists": True}})
        )
    assert matched is not None and absent == []
    sql = str(matched.compile(compile_kwargs={"literal_binds": True}))
    listed, _, looked_up = sql.partition("EXISTS")
    assert ("'cover'" in listed, "'topics'" in looked_up) == (True, True)


def test_a_query_probes_each_test_once(props: Served) -> None:
    """The narrowest test is chosen once a query, not again for its count and its page."""
    where = parse_where({"topics": {"exists": True}, "cover": {"exists": True}})
    with statements_run(props.app.db) as statements, read.read_snapshot(props.app.db) as conn:
        page = read.query_files(conn, read.FileFilters(where=where), 10, 0)
    probes = [sql for sql in statements if "note_properties" in sql and "LIMIT" in sql]
    assert page.total == 1  # b.md has both
    assert len([sql for sql in probes if "count" in sql]) == 2  # one per test


async def test_where_alone_and_with_other_filters_count_alike(tools: Tools) -> None:
    alone = await tools.ok("query_files", where={"topics": ["x", "y"]})
    with_folder = await tools.ok("query_files", where={"topics": ["x", "y"]}, directory="")
    with_time = await tools.ok("query_files", where={"topics": ["x", "y"]}, modifiedSince=0)
    assert alone["total"] == with_folder["total"] == with_time["total"] == 2


async def test_where_combines_with_the_other_filters_and_pages(tools: Tools) -> None:
    data = await tools.ok("query_files", where={"topics": {"exists": True}}, limit=1, offset=1)
    assert ([f["path"] for f in data["files"]], data["total"], data["hasMore"]) == (
        ["b.md"],
        3,
        True,
    )


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (
            {"due": {"before": "x"}},
            "where.due.before: unknown operator (use eq, in, lt, lte, gt, gte, exists, contains)",
        ),
        ({"due": {}}, "where.due: no operator (use eq, in, lt, lte, gt, gte, exists, contains)"),
        ({"due": {"lt": None}}, "where.due.lt: expected a number or text (an ISO date, say)"),
        ({"x": {"exists": "yes"}}, "where.x.exists: expected true or false"),
        (
            {"x": {"a": 1}},
            "where.x.a: unknown operator (use eq, in, lt, lte, gt, gte, exists, contains)",
        ),
        ({"x": [{"a": 1}]}, "where.x: expected text, a number, true/false or null"),
        ({" ": 1}, "where: a property name is empty"),
    ],
)
async def test_a_filter_that_cannot_apply_is_named(
    tools: Tools, where: dict[str, Any], message: str
) -> None:
    assert await tools.error("query_files", where=where) == f"Invalid arguments: {message}"


async def test_titles_are_what_obsidian_shows(tools: Tools) -> None:
    titles = {f["path"]: f["title"] for f in (await tools.ok("query_files"))["files"]}
    assert titles == {
        "a.md": "a",
        "b.md": "b",
        "c.md": "c",
        "d.md": "The Real Title",
        "e.md": "e",
        "f.md": "f",
    }
    e = await tools.ok("get_file", path="e.md")
    assert (e["title"], e["heading"]) == ("e", "This note in GitHub")
