"""The three edges of search agree: `search_notes`, `weaver search --json` and the dashboard's
search return the same notes in the same order, a note named exactly what was searched for
first, with the same folder and tag filters."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from weaver.cli import main
from weaver.config import Settings
from weaver.dashboard import data
from weaver.search import SearchRequest

pytestmark = pytest.mark.anyio

# Notes whose every name says "tasks", and the note named Tasks whose text never does: BM25
# ranks it last; only the pinning of an exact name brings it first.
FILES = {
    **{
        f"projects/plan-{n}.md": f"---\ntags: [work]\n---\n# Plan {n}\n"
        + "tasks to do, tasks done, weekly review of tasks\n" * (n + 1)
        for n in range(6)
    },
    **{
        f"lists/tasks-{n}.md": "---\naliases: [tasks tasks]\n---\n# Tasks tasks\n## tasks\n"
        + "tasks " * (3 + n)
        for n in range(6)
    },
    "zz/Tasks.md": "# Open items\nOf the week, " + "and more words " * 40,
    "projects/review.md": "---\ntags: [work/weekly]\n---\n# Review\nThe weekly review: tasks.\n",
}

# (query, directory, tag): an exact note name, words, a phrase, each filter and both.
QUERIES = [
    ("Tasks", None, None),
    ("tasks", None, None),
    ("tasks review", None, None),
    ('"weekly review"', None, None),
    ("tasks", "projects", None),
    ("Tasks", None, "work"),
    ("tasks", "projects", "#Work/Weekly"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    root = write_files(tmp_path / "vault", FILES)
    served = serve(Settings(vault=root, semantic=False))
    yield served
    served.app.close()


async def by_tool(served: Served, query: str, directory: str | None, tag: str | None) -> list[str]:
    filters = {k: v for k, v in (("directory", directory), ("tag", tag)) if v is not None}
    async with Client(served.server, mode="legacy") as client:
        found = await Tools(client).ok("search_notes", query=query, limit=20, **filters)
    return [hit["path"] for hit in found["results"]]


def by_cli(
    root: Path, capsys: pytest.CaptureFixture[str], query: str, folder: str | None, tag: str | None
) -> list[str]:
    filters = [*(["--directory", folder] if folder else []), *(["--tag", tag] if tag else [])]
    args = ["--vault", str(root), "search", query, "--json", "--limit", "20", *filters]
    assert main(args) == 0
    return [hit["path"] for hit in json.loads(capsys.readouterr().out)["results"]]


def by_dashboard(served: Served, query: str, folder: str | None, tag: str | None) -> list[str]:
    tag_key = tag.lstrip("#").casefold() if tag else None  # as the tool's argument takes it
    view = data.search_notes(served.state, SearchRequest(query, None, folder, tag_key, limit=20))
    assert view.error is None
    return [hit.path for hit in view.results.hits]


async def test_the_tool_the_cli_and_the_dashboard_return_the_same_notes_in_order(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    for query, folder, tag in QUERIES:
        from_tool = await by_tool(served, query, folder, tag)
        assert from_tool, query  # each query finds something: the comparison means something
        assert by_cli(served.root, capsys, query, folder, tag) == from_tool, (query, folder, tag)
        assert by_dashboard(served, query, folder, tag) == from_tool, (query, folder, tag)


async def test_a_note_named_as_searched_comes_first_everywhere(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (await by_tool(served, "Tasks", None, None))[0] == "zz/Tasks.md"
    assert by_cli(served.root, capsys, "tasks", None, None)[0] == "zz/Tasks.md"
    assert by_dashboard(served, "TASKS", None, None)[0] == "zz/Tasks.md"
