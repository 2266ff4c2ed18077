"""PDF text through the SDK's in-memory client: search_notes answers a PDF page apart from
the notes, naming its file and page and the get_attachment call that reads it (which does);
list_problems lists a PDF that cannot be read with why; a served writer's watcher and
extractor keep the hits in step as a PDF appears, changes and goes; without pypdfium2 the
answer says why there are no PDF hits."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.attachments.pdfs import text_pdf
from tests.helpers import wait_for_async, write_files
from tests.mcp_server.test_access import PHONE, client_of
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from weaver.config import AccessRule, Settings
from weaver.index.attachment_text import extract_pending

# Each on both cache backends: FTS5 on SQLite, tsvectors on PostgreSQL, the same answers.
pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


FILES: dict[str, str | bytes] = {
    "Home.md": "Links to [[Reports/q3.pdf]]; the harvest moon is a note's phrase too.\n",
    "Reports/q3.pdf": text_pdf(["Quarterly report", "Harvest moon yields rose sharply"]),
    "Reports/q4.pdf": text_pdf(["The harvest moon again"]),
    "Archive/old.md": "old\n",
    "Reports/broken.pdf": b"%PDF-1.4\n1 0 obj << /Type /Catal",
}


READ_ARCHIVE = AccessRule(client=PHONE, read=["Archive/**", "Home.md"])


@pytest.fixture
def site(tmp_path: Path, db_url: str | None) -> Iterator[Served]:
    root = write_files(tmp_path / "vault", FILES)
    settings = Settings(vault=root, database_url=db_url, toolsets=["all"], access=[READ_ARCHIVE])
    served = serve(settings)
    extract_pending(served.app.db, served.app.vault)
    yield served
    served.app.close()


@pytest.fixture
async def tools(site: Served) -> AsyncIterator[Tools]:
    async with Client(site.server) as client:
        yield Tools(client)


async def test_a_pdf_page_is_a_hit_of_its_own_naming_file_page_and_how_to_read_it(
    tools: Tools,
) -> None:
    found = await tools.ok("search_notes", query="yields rose")
    assert found["results"] == [] and found["total"] == 0  # no note holds it
    assert found["attachmentTotal"] == 1 and found["hasMore"] is False
    (hit,) = found["attachments"]
    assert hit == {
        "path": "Reports/q3.pdf",
        "page": 2,
        "snippet": "Harvest moon <mark>yields</mark> <mark>rose</mark> sharply",
        "score": hit["score"],
        "readWith": 'get_attachment {"path": "Reports/q3.pdf", "page": 2}',
    }
    page = await tools.ok("get_attachment", path="Reports/q3.pdf", page=2)
    assert page["text"] == "Harvest moon yields rose sharply"


async def test_notes_and_pdf_pages_come_together_and_page_alike(tools: Tools) -> None:
    first = await tools.ok("search_notes", query='"harvest moon"', limit=1)
    assert [r["path"] for r in first["results"]] == ["Home.md"]
    assert (first["total"], first["attachmentTotal"], first["hasMore"]) == (1, 2, True)
    assert first["attachmentText"] is None
    second = await tools.ok("search_notes", query='"harvest moon"', limit=1, offset=1)
    assert second["results"] == [] and second["hasMore"] is False
    pages = [(a["path"], a["page"]) for a in first["attachments"] + second["attachments"]]
    assert sorted(pages) == [("Reports/q3.pdf", 2), ("Reports/q4.pdf", 1)]
    elsewhere = await tools.ok("search_notes", query='"harvest moon"', directory="Archive")
    assert elsewhere["attachments"] == []
    tagged = await tools.ok("search_notes", query='"harvest moon"', tag="x")
    assert tagged["attachments"] == []  # an attachment has no tags


async def test_a_client_reading_some_folders_sees_no_pdf_page_outside_them(site: Served) -> None:
    async with client_of(site, PHONE) as tools:
        found = await tools.ok("search_notes", query='"harvest moon"')
        assert [r["path"] for r in found["results"]] == ["Home.md"]
        assert found["attachments"] == []
        problems = await tools.ok("list_problems", kind="attachments")
        assert problems["problems"] == []


async def test_list_problems_names_the_unreadable_pdf_and_why(tools: Tools) -> None:
    found = await tools.ok("list_problems", kind="attachments")
    assert found["total"] == 1
    (problem,) = found["problems"]
    assert problem["path"] == "Reports/broken.pdf"
    assert "not a PDF that can be read" in problem["error"]


async def test_without_pypdfium2_the_answer_says_why_pdfs_are_not_searched(
    tools: Tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pypdfium2", None)
    found = await tools.ok("search_notes", query="lantern")  # in no PDF read before
    assert found["attachments"] == []
    assert "weaver-mcp[attachments]" in found["attachmentText"]


async def test_a_served_writer_keeps_pdf_hits_in_step_with_the_disk(
    tmp_path: Path, db_url: str | None
) -> None:
    root = write_files(tmp_path / "vault", {"Home.md": "home\n"})
    settings = Settings(vault=root, database_url=db_url, toolsets=["all"], debounce_ms=20)
    served = serve(settings, reconcile=False)
    served.state.watch = True
    try:
        async with Client(served.server) as client:
            tools = Tools(client)
            await wait_for_async(lambda: served.state.pdf_text is not None, 20, "the extractor")

            async def pages(query: str) -> list[Any]:
                found = await tools.ok("search_notes", query=query)
                return [(a["path"], a["page"]) for a in found["attachments"]]

            async def settle(query: str, expected: list[Any]) -> None:
                for _ in range(400):
                    if await pages(query) == expected:
                        return
                    await anyio.sleep(0.05)
                assert await pages(query) == expected

            (root / "new.pdf").write_bytes(text_pdf(["Copper kettle inventory"]))
            await settle("kettle", [("new.pdf", 1)])
            (root / "new.pdf").write_bytes(text_pdf(["Intro", "Brass lantern inventory"]))
            await settle("lantern", [("new.pdf", 2)])
            assert await pages("kettle") == []
            (root / "new.pdf").unlink()
            await settle("lantern", [])
    finally:
        served.app.close()
    assert served.state.pdf_text is None  # stopped with the writer role
