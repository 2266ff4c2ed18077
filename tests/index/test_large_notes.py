"""A file named `.md` bigger than any note (`MAX_NOTE_BYTES`): listed with an error, never read
whole, never served, and indexed normally again once it shrinks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from weaver.cache import fts, read
from weaver.config import Settings
from weaver.errors import NoteTooLargeError
from weaver.mcp_server.arguments import MAX_CONTENT_CHARS
from weaver.mcp_server.sizing import TEXT_TOKEN_BUDGET
from weaver.vault.events import NoteModified
from weaver.vault.fs import MAX_NOTE_BYTES, Vault

pytestmark = pytest.mark.anyio

HEAD = "---\ntype: dump\n---\n#huge [[small]] needle\n"


def huge_note(extra: int = 1) -> bytes:
    """A note `extra` bytes over the limit, with a tag, a link and a word at its start."""
    head = HEAD.encode()
    return head + b"x" * (MAX_NOTE_BYTES + extra - len(head))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def served(tmp_path: Path) -> Served:
    root = tmp_path / "vault"
    write_files(root, {"small.md": "[[big]] #kept\n", "big.md": huge_note()})
    return serve(Settings(vault=root))


@pytest.fixture
async def tools(served: Served) -> AsyncIterator[Tools]:
    try:
        async with Client(served.server, mode="legacy") as client:
            yield Tools(client)
    finally:
        served.app.close()


async def test_a_huge_note_is_listed_with_an_error_but_not_read(
    served: Served, tools: Tools
) -> None:
    big = await tools.ok("get_file", path="big.md")
    assert big["size"] == MAX_NOTE_BYTES + 1
    assert (big["type"], big["tags"], big["links"]["outgoing"]) == (None, [], [])
    assert big["contentHash"] == ""
    # Links to it still resolve: the file is there.
    small = await tools.ok("get_file", path="small.md")
    assert (small["links"]["outgoing"], small["links"]["broken"]) == (["big.md"], [])
    assert (await tools.ok("search_tags", tag="huge"))["count"] == 0
    assert (await tools.ok("search_notes", query="needle"))["total"] == 0
    with read.read_snapshot(served.app.db) as conn:
        assert read.get_stats(conn).files_with_errors == 1
        assert fts.note_bodies(conn, ["big.md"]) == {"big.md": ""}


async def test_a_huge_note_is_refused_by_name_and_size(tools: Tools) -> None:
    expected = "File too large: 'big.md' (67,108,865 bytes; notes over 64 MiB are not read)"
    assert await tools.error("get_file_content", path="big.md") == expected
    assert await tools.error("update_file", path="big.md", content="short") == expected
    assert await tools.error("move_file", path="big.md", newPath="elsewhere.md") == expected
    assert (await tools.ok("get_file_content", path="small.md"))["content"] == "[[big]] #kept\n"


async def test_a_long_note_comes_in_pages_that_fit_a_context_window(
    served: Served, tools: Tools
) -> None:
    """Not huge, but more than one answer should carry: pages, and where to go on. A page of
    non-ASCII text holds fewer characters (two estimated tokens each)."""
    text = "é" * (MAX_CONTENT_CHARS + 5)  # characters, not bytes: two bytes each
    (served.root / "long.md").write_text(text, encoding="utf-8")
    first = await tools.ok("get_file_content", path="long.md")
    assert (len(first["content"]), first["totalLength"]) == (TEXT_TOKEN_BUDGET // 2, len(text))
    assert (first["truncated"], first["nextOffset"], first["size"]) == (
        True,
        TEXT_TOKEN_BUDGET // 2,
        2 * len(text),
    )
    pages, offset = [first["content"]], first["nextOffset"]
    while offset is not None:
        page = await tools.ok("get_file_content", path="long.md", offset=offset, length=10**9)
        pages.append(page["content"])
        offset = page["nextOffset"]
    assert "".join(pages) == text and pages[-1] == "é" * 5


async def test_a_huge_note_that_shrinks_is_indexed_again(served: Served, tools: Tools) -> None:
    (served.root / "big.md").write_text(HEAD, encoding="utf-8")
    served.app.indexer.apply_paths(["big.md"])
    big = await tools.ok("get_file", path="big.md")
    assert (big["type"], big["tags"]) == ("dump", ["huge"])
    assert (await tools.ok("search_notes", query="needle"))["total"] == 1


async def test_a_note_that_grows_too_large_keeps_its_name_and_loses_its_content(
    served: Served, tools: Tools
) -> None:
    (served.root / "small.md").write_bytes(huge_note())
    report = served.app.indexer.apply_paths(["small.md"])
    assert report.events == [NoteModified("small.md")]
    small = await tools.ok("get_file", path="small.md")
    assert (small["tags"], small["links"]["outgoing"]) == ([], [])
    assert (await tools.ok("get_stats"))["filesWithErrors"] == 2


def test_read_note_stops_at_the_limit(tmp_path: Path) -> None:
    write_files(tmp_path, {"big.md": huge_note(extra=5 << 20), "ok.md": "fine"})
    vault = Vault(tmp_path)
    with pytest.raises(
        NoteTooLargeError, match=r"'big\.md' \(72,351,744 bytes; notes over 64 MiB are not read\)"
    ):
        vault.read_note("big.md")
    assert vault.read_note("ok.md") == b"fine"
