"""Prompts built from the cache: listed with their arguments, and each one's text made from
the vault as it is (a change shows in the next get)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, serve
from weaver.config import Settings

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

FILES: dict[str, str | bytes] = {
    "Garden.md": "# Garden\nTomatoes and [[Compost]] and [[Missing plan]].\n",
    "Compost.md": "Feeds the [[Garden]]. #soil\n",
    "diary/Monday.md": "Worked in the Garden all day.\n",
    "diary/Tuesday.md": "Rain. See [[Missing plan]] and [[Gardn]].\n",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, module_db_url: str | None) -> Iterator[Served]:
    root = write_files(tmp_path_factory.mktemp("prompts") / "vault", FILES)
    state = serve(Settings(vault=root, database_url=module_db_url))
    yield state
    state.app.close()


@pytest.fixture
async def client(served: Served) -> AsyncIterator[Client]:
    async with Client(served.server, mode="legacy") as connected:
        yield connected


async def text_of(client: Client, name: str, **args: str) -> str:
    result = await client.get_prompt(name, args)
    return result.messages[0].content.text  # type: ignore[union-attr]


async def test_prompts_are_listed_with_arguments(client: Client) -> None:
    listed = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(listed) == {
        "review_changes",
        "connect_note",
        "summarize_folder",
        "triage_broken_links",
        "agenda",
    }
    assert [(a.name, a.required) for a in listed["connect_note"].arguments or []] == [
        ("path", True)
    ]


async def test_connect_note_gathers_its_neighbourhood(client: Client) -> None:
    text = await text_of(client, "connect_note", path="Garden.md")
    assert "Tomatoes and [[Compost]]" in text
    assert "- Compost.md\n- Missing plan (unresolved)" in text
    assert "## Linked from\n\n- Compost.md" in text
    mentions = text.split("without linking to it\n\n")[1]
    assert mentions.startswith("- diary/Monday.md\n")  # names the garden, links nothing
    with pytest.raises(MCPError):
        await text_of(client, "connect_note", path="Nowhere.md")


async def test_folder_review_and_triage_come_from_the_cache(client: Client, served: Served) -> None:
    folder = await text_of(client, "summarize_folder", folder="diary")
    assert (
        "2 notes" in folder
        and "- diary/Monday.md — Monday: Worked in the Garden all day." in folder
    )
    review = await text_of(client, "review_changes", period="week")
    assert "4 notes were added or edited" in review
    triage = await text_of(client, "triage_broken_links")
    assert "- [[Missing plan]] ×2 in 2 notes (Garden.md, diary/Tuesday.md)" in triage
    assert "- [[Gardn]] ×1 in 1 notes (diary/Tuesday.md); maybe Garden.md" in triage
    (served.root / "diary" / "Wednesday.md").write_text("Sun.\n", encoding="utf-8")
    served.app.indexer.apply_paths(["diary/Wednesday.md"])
    assert "3 notes" in await text_of(client, "summarize_folder", folder="diary")
