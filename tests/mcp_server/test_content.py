"""The backlinks pane's line: a window around the link, whatever the line's length."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import serve, tools_of
from weaver.config import Settings
from weaver.markdown.parser import find_link_spans
from weaver.mcp_server.content import CONTEXT_CHARS, link_window

FILES: dict[str, str | bytes] = {
    "far.md": "# Far\n",
    "late.md": "# Late\n" + "intro words " * 50 + "see [[far|the far note]]\n",
    "mid.md": "before " * 80 + "[Far](far.md#Far) " + "after " * 80 + "\n",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_a_short_line_is_whole() -> None:
    assert link_window("  see [[Hub]] here  ", {"Hub"}) == "see [[Hub]] here"


def test_the_window_holds_the_link_and_cuts_at_words() -> None:
    line = "lorem ipsum " * 60 + "[[Obsidian Sync|Sync]] " + "dolor sit " * 60
    window = link_window(line, {"Obsidian Sync"})
    assert "[[Obsidian Sync|Sync]]" in window and len(window) <= CONTEXT_CHARS + 2
    assert window.startswith(("…lorem", "…ipsum"))
    assert window.endswith(("dolor…", "sit…"))


def test_the_linked_target_is_found_among_other_links() -> None:
    line = "[[Other]] " + "x " * 300 + "![[Hub.png]] " + "y " * 300
    assert "![[Hub.png]]" in link_window(line, {"Hub.png"})


def test_a_link_longer_than_the_window_is_kept_whole() -> None:
    target = "a" * 400
    window = link_window("start " * 100 + f"[[{target}]] end", {target})
    assert f"[[{target}]]" in window


def test_without_the_link_on_the_line_the_line_starts_it() -> None:
    window = link_window("word " * 100, {"Hub"})
    assert window.startswith("word") and window.endswith("…")


def test_link_spans_as_the_parser_finds_them() -> None:
    text = "a [[Hub#Top|h]] b [t](Some%20Note.md) `[[no]]` ![[img.png]]"
    assert [(text[s:e], t) for s, e, t in find_link_spans(text)] == [
        ("[[Hub#Top|h]]", "Hub"),
        ("[t](Some%20Note.md)", "Some Note.md"),
        ("![[img.png]]", "img.png"),
    ]


@pytest.mark.anyio
async def test_backlink_context_is_a_window_around_the_link(tmp_path: Path) -> None:
    served = serve(Settings(vault=write_files(tmp_path / "vault", FILES)))
    try:
        async with tools_of(served, "legacy") as tools:
            args = {"path": "far.md", "direction": "incoming", "context": True}
            data = await tools.ok("search_links", **args)
    finally:
        served.app.close()
    late, mid = ({"path": c["path"], **c["lines"][0]} for c in data["context"])
    # The link stands past the line's first 300 characters: the window ends with it.
    assert late["path"] == "late.md" and late["line"] == 2
    assert late["text"].startswith("…") and late["text"].endswith("see [[far|the far note]]")
    assert len(late["text"]) <= 301
    # In the middle of a long line: cut on both sides, the link inside.
    assert mid["line"] == 1 and "[Far](far.md#Far)" in mid["text"]
    assert mid["text"].startswith("…before") and mid["text"].endswith("after…")
    assert len(mid["text"]) <= 302
