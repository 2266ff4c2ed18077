"""The reader role (`weaver serve --no-vault`), through the SDK's in-memory client: every read
answered from the cache alone, no write tool offered (and a call of one told why), no file
opened, nothing written to the cache, and the writer's changes followed within a poll."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from tests.helpers import wait_for_async, write_files
from weaver.cache.recovery import sqlite_file
from weaver.config import Settings
from weaver.errors import CacheError
from weaver.mcp_server.server import build_server
from weaver.runtime.app import App, open_app
from weaver.runtime.engines import reading_engine
from weaver.runtime.follow import FeedFollower
from weaver.runtime.state import ServerState
from weaver.vault.fs import CacheOnlyVault

pytestmark = pytest.mark.anyio

FILES = {
    "Home.md": "---\ntags: [start]\n---\n# Home\nSee [[Topic]] about zebras.\n",
    "sub/Topic.md": "# Topic\nLinked from home. #idea\n",
}
WRITE_TOOLS = {"create_file", "update_file", "delete_file", "move_file", "trigger_workflow"}


@dataclass
class Pair:
    writer: App
    reader: App
    server: MCPServer[ServerState]
    state: ServerState
    root: Path


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    root = write_files(tmp_path / "vault", FILES)
    # The cache outside the vault, as on a reader's host (the vault's folder removed by tests).
    settings = Settings(vault=root, database_url=f"sqlite:///{tmp_path / 'cache.db'}")
    writer = open_app(settings)
    writer.indexer.reconcile()
    read_only = settings.model_copy(update={"read_only": True})
    reader = open_app(read_only, files=False)
    state = ServerState(reader, watch=False, engine=reading_engine(reader), may_write=False)
    yield Pair(writer, reader, build_server(state), state, root)
    reader.close()
    writer.close()


@pytest.fixture
def looked(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set once a feed follower has looked at the feed: its first look sets the position a
    change must come after to be heard."""
    looked = threading.Event()
    poll = FeedFollower.poll

    def poll_and_say(self: FeedFollower) -> int:
        published = poll(self)
        looked.set()
        return published

    monkeypatch.setattr(FeedFollower, "poll", poll_and_say)
    return looked


@pytest.fixture
async def client(pair: Pair) -> AsyncIterator[Client]:
    async with Client(pair.server) as connected:
        yield connected


def envelope(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


async def test_tools_list_has_no_write_tool_and_says_why(client: Client) -> None:
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert names.isdisjoint(WRITE_TOOLS)
    assert {"get_file", "search_notes", "get_workflow_history", "get_stats"} <= names
    instructions = client.instructions or ""
    assert "reader (weaver serve --no-vault)" in instructions
    assert "create_file" in instructions and "trigger_workflow" in instructions


async def test_a_write_tool_called_on_a_reader_names_the_writer(client: Client) -> None:
    result = await client.call_tool("create_file", {"path": "x.md", "content": "x"})
    assert result.is_error
    error = envelope(result)["error"]
    assert "reader (weaver serve --no-vault)" in error and "weaver daemon" in error


async def test_reads_answer_from_the_cache_without_the_files(pair: Pair, client: Client) -> None:
    shutil.rmtree(pair.root)  # the reader's host has no vault at all
    home = envelope(await client.call_tool("get_file", {"path": "Home.md"}))
    assert home["success"], home
    assert home["data"]["links"]["outgoing"] == ["sub/Topic.md"]
    found = envelope(await client.call_tool("search_notes", {"query": "zebras"}))
    assert [hit["path"] for hit in found["data"]["results"]] == ["Home.md"]
    tags = envelope(await client.call_tool("search_tags", {"tag": "idea"}))
    assert tags["success"], tags
    history = envelope(await client.call_tool("get_workflow_history", {}))
    assert history["success"], history
    text = envelope(await client.call_tool("get_file_content", {"path": "Home.md"}))
    assert not text["success"]
    assert "needs the note's file" in text["error"] and "writer" in text["error"]


async def test_the_reader_never_writes_the_cache(pair: Pair) -> None:
    with pair.reader.db.connect() as conn, pytest.raises(Exception, match="readonly"):
        conn.exec_driver_sql("DELETE FROM notes")


def test_a_reader_refuses_a_cache_no_writer_made(tmp_path: Path) -> None:
    root = write_files(tmp_path / "vault", FILES)
    settings = Settings(vault=root, read_only=True)
    with pytest.raises(CacheError, match="start the writer"):
        open_app(settings, files=False)
    path = sqlite_file(settings.db_url)
    assert path is not None and not path.exists()


def test_a_reader_refuses_a_cache_at_another_schema(pair: Pair) -> None:
    path = sqlite_file(pair.writer.settings.db_url)
    assert path is not None
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0001'")
    with pytest.raises(CacheError, match=r"the writer .* migrates it"):
        open_app(pair.reader.settings, files=False)


async def test_the_reader_follows_what_the_writer_indexes(pair: Pair, client: Client) -> None:
    follower = FeedFollower(pair.reader)
    heard: list[Any] = []
    pair.reader.bus.subscribe(heard.extend)
    assert follower.poll() == 0  # the first look sets the position
    (pair.root / "New.md").write_text("# New\nabout [[Home]] and giraffes\n", encoding="utf-8")
    pair.writer.indexer.reconcile()
    assert follower.poll() == 1
    assert [event.path for event in heard] == ["New.md"]
    found = envelope(await client.call_tool("search_notes", {"query": "giraffes"}))
    assert [hit["path"] for hit in found["data"]["results"]] == ["New.md"]
    home = envelope(await client.call_tool("get_file", {"path": "Home.md"}))
    assert home["data"]["links"]["incoming"] == ["New.md"]  # the kept graph followed


async def test_the_lifespan_follows_the_feed_by_itself(
    pair: Pair, looked: threading.Event, client: Client
) -> None:
    """The served reader's lifespan runs the follower: a subscribed-style bus listener hears
    the writer's change without any call made to the reader."""
    heard = anyio.Event()
    pair.reader.bus.subscribe(lambda events: heard.set())
    await client.call_tool("get_stats", {})  # the lifespan has started following
    await wait_for_async(looked.is_set, 5, "the follower's first look")
    (pair.root / "Later.md").write_text("# Later\n", encoding="utf-8")
    await anyio.to_thread.run_sync(pair.writer.indexer.reconcile)
    with anyio.fail_after(5):
        await heard.wait()


async def test_health_of_a_reader_without_the_vault(pair: Pair, client: Client) -> None:
    shutil.rmtree(pair.root)
    health = envelope(await client.call_tool("health_check", {}))["data"]
    assert health["role"] == "reader"
    assert health["status"] == "healthy", health["problems"]


async def test_a_folder_filter_of_a_reader_looks_at_the_cache_only(
    pair: Pair, client: Client
) -> None:
    (pair.root / "empty").mkdir()  # no note in it: a writer accepts it, a reader cannot tell
    answer = envelope(await client.call_tool("query_files", {"directory": "sub"}))
    assert answer["success"], answer
    missing = envelope(await client.call_tool("query_files", {"directory": "empty"}))
    assert "Folder not found" in missing["error"]


async def test_a_reader_prompt_stands_without_the_text_and_a_note_resource_says_why(
    client: Client,
) -> None:
    prompt = await client.get_prompt("connect_note", {"path": "Home.md"})
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "sub/Topic.md" in text and "not quoted: this server is a reader" in text
    with pytest.raises(MCPError, match="this server is a reader"):
        await client.read_resource("weaver://note/Home.md")
    stats = await client.read_resource("weaver://vault/stats")
    assert json.loads(stats.contents[0].text)["totalFiles"] == 2  # type: ignore[union-attr]


async def test_a_reader_answers_note_text_the_cache_keeps(pair: Pair) -> None:
    """Where the cache keeps the notes' text (a PostgreSQL cache's `note_texts`), a reader's
    vault is handed a way to read it, and get_file_content answers from it."""
    kept = {"Home.md": FILES["Home.md"]}
    vault = CacheOnlyVault(pair.root, (), texts=kept.get)
    app = replace(pair.reader, vault=vault)
    state = ServerState(app, watch=False, engine=reading_engine(app), may_write=False)
    shutil.rmtree(pair.root)
    async with Client(build_server(state)) as client:
        text = envelope(await client.call_tool("get_file_content", {"path": "Home.md"}))
        assert text["success"] and text["data"]["content"] == FILES["Home.md"]
        other = envelope(await client.call_tool("get_file_content", {"path": "sub/Topic.md"}))
        assert "needs the note's file" in other["error"]


async def test_a_subscriber_to_a_reader_hears_of_the_writers_change(
    pair: Pair, looked: threading.Event
) -> None:
    """The writer is another process: its change reaches the reader's subscribed client
    through the change feed the reader follows (`runtime.follow`)."""
    updated = anyio.Event()
    uris: list[str] = []

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/resources/updated":
            uris.append(str(root.params.uri))
            updated.set()

    async with Client(pair.server, mode="legacy", message_handler=on_message) as client:
        with pytest.warns(MCPDeprecationWarning):  # the 2025 protocols' subscription
            await client.subscribe_resource("weaver://note/Home.md")
        await wait_for_async(looked.is_set, 5, "the follower's first look")
        (pair.root / "Home.md").write_text("# Home\nedited by the writer\n", encoding="utf-8")
        await anyio.to_thread.run_sync(pair.writer.indexer.reconcile)
        with anyio.fail_after(5):
            await updated.wait()
    assert uris == ["weaver://note/Home.md"]


async def test_a_reader_on_postgresql_answers_the_notes_text(
    tmp_path: Path, postgres_url: str
) -> None:
    """A PostgreSQL cache keeps each note's text (`note_texts`): a reader on another host,
    without the files, answers get_file_content from it, and its session writes nothing."""
    root = write_files(tmp_path / "vault", FILES)
    settings = Settings(vault=root, database_url=postgres_url)
    writer = open_app(settings)
    try:
        writer.indexer.reconcile()
    finally:
        writer.close()
    shutil.rmtree(root)
    reader = open_app(settings.model_copy(update={"read_only": True}), files=False)
    try:
        state = ServerState(reader, watch=False, engine=reading_engine(reader), may_write=False)
        async with Client(build_server(state)) as client:
            text = envelope(await client.call_tool("get_file_content", {"path": "Home.md"}))
            assert text["success"], text
            assert text["data"]["content"] == FILES["Home.md"]
            found = envelope(await client.call_tool("search_notes", {"query": "zebras"}))
            assert [hit["path"] for hit in found["data"]["results"]] == ["Home.md"]
        with reader.db.connect() as conn, pytest.raises(Exception, match="read-only"):
            conn.exec_driver_sql("DELETE FROM notes")
    finally:
        reader.close()
