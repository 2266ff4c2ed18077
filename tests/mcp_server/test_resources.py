"""Resources over the SDK's client (legacy protocol, as real clients speak it): the note
template, resources/list in pages with cursors, vault resources, reads and their errors, and a
subscription that hears of a note's change once the indexer applies it (as the watcher does)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import PromptReference, ResourceTemplateReference

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, serve
from weaver.config import Settings
from weaver.engine import Registry, workflow
from weaver.mcp_server import build_server, resources
from weaver.runtime.engines import engine_for
from weaver.runtime.state import ServerState

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

NOTES = 1_203  # many pages


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, module_db_url: str | None) -> Iterator[Served]:
    files: dict[str, str | bytes] = {f"n/{i:04}.md": f"# {i}\n#t{i % 3}\n" for i in range(NOTES)}
    files["Sp ace é.md"] = "---\ntitle: Spaced\n---\nbody\n"
    root = write_files(tmp_path_factory.mktemp("resources") / "vault", files)
    state = serve(Settings(vault=root, database_url=module_db_url))
    yield state
    state.app.close()


@pytest.fixture
async def client(served: Served) -> AsyncIterator[Client]:
    async with Client(served.server, mode="legacy") as connected:
        yield connected


async def test_the_note_template_and_capabilities(client: Client) -> None:
    templates = (await client.list_resource_templates()).resource_templates
    assert [(t.uri_template, t.mime_type) for t in templates] == [
        ("weaver://note/{+path}", "text/markdown"),
        ("weaver://base/{+path}", "application/json"),
        ("weaver://attachment/{+path}", None),  # an image's type, or JSON
        ("weaver://help/{tool}", "text/markdown"),
    ]
    caps = client.server_capabilities
    assert caps.resources is not None and caps.resources.subscribe is True
    assert caps.resources.list_changed is True  # sent when notes come and go: advertised


async def test_resources_list_pages_through_every_note(client: Client) -> None:
    uris: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = (
            await client.list_resources(cursor=cursor) if cursor else await client.list_resources()
        )
        uris += [str(r.uri) for r in page.resources]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == -(-(NOTES + 1) // resources.PAGE_SIZE)
    assert uris[:3] == [resources.STATS_URI, resources.TAGS_URI, "weaver://tasks/today"]
    notes = uris[3:]
    assert len(notes) == len(set(notes)) == NOTES + 1
    assert notes[0] == "weaver://note/Sp%20ace%20%C3%A9.md"
    with pytest.raises(MCPError, match="Invalid cursor"):
        await client.list_resources(cursor="!!!")


async def test_reading_notes_and_vault_resources(client: Client) -> None:
    note = (await client.read_resource("weaver://note/Sp%20ace%20%C3%A9.md")).contents[0]
    assert (note.mime_type, note.text) == ("text/markdown", "---\ntitle: Spaced\n---\nbody\n")  # type: ignore[union-attr]
    stats = json.loads((await client.read_resource(resources.STATS_URI)).contents[0].text)  # type: ignore[union-attr]
    assert stats["totalFiles"] == NOTES + 1
    tags = json.loads((await client.read_resource(resources.TAGS_URI)).contents[0].text)  # type: ignore[union-attr]
    assert [t["tag"] for t in tags["tags"]] == ["t0", "t1", "t2"]
    with pytest.raises(MCPError, match=re.escape("File not found: 'n/9999.md'")):
        await client.read_resource("weaver://note/n/9999.md")
    with pytest.raises(MCPError, match="Invalid path"):
        await client.read_resource("weaver://note/../outside.md")
    with pytest.raises(MCPError, match="Unknown resource"):
        await client.read_resource("weaver://elsewhere/x")


async def test_a_subscriber_hears_of_changes_to_its_note(served: Served) -> None:
    heard: list[Any] = []
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        heard.append(message)
        changed.set()

    async with Client(served.server, mode="legacy", message_handler=on_message) as client:
        # The 2025 protocols' subscription, which real clients speak (the SDK warns that the
        # 2026 one replaces it with subscriptions/listen).
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource("weaver://note/n/0001.md")
        (served.root / "n" / "0001.md").write_text("# edited\n", encoding="utf-8")
        (served.root / "n" / "0002.md").write_text("# not subscribed\n", encoding="utf-8")
        await anyio.to_thread.run_sync(served.app.indexer.apply_paths, ["n/0001.md", "n/0002.md"])
        with anyio.fail_after(5):
            await changed.wait()
        updated = [
            m
            for m in heard
            if getattr(getattr(m, "root", m), "method", "") == "notifications/resources/updated"
        ]
        assert [str(getattr(m, "root", m).params.uri) for m in updated] == [
            "weaver://note/n/0001.md"
        ]
        (served.root / "n" / "new.md").write_text("# new\n", encoding="utf-8")
        changed = anyio.Event()
        await anyio.to_thread.run_sync(served.app.indexer.apply_paths, ["n/new.md"])
        with anyio.fail_after(5):
            await changed.wait()
        methods = [getattr(getattr(m, "root", m), "method", "") for m in heard]
        assert methods[-1] == "notifications/resources/list_changed"
        with pytest.warns(MCPDeprecationWarning):
            await client.unsubscribe_resource("weaver://note/n/0001.md")


async def test_completions_of_the_note_template_path(client: Client) -> None:
    ref = ResourceTemplateReference(type="ref/resource", uri="weaver://note/{+path}")
    done = (await client.complete(ref, {"name": "path", "value": "n/0"})).completion
    assert (done.values[:2], len(done.values), done.has_more) == (
        ["n/0000.md", "n/0001.md"],
        100,
        True,
    )
    few = (await client.complete(ref, {"name": "path", "value": "sp ACE"})).completion
    assert (few.values, few.has_more) == (["Sp ace é.md"], False)  # case ignored when needed
    tags = PromptReference(type="ref/prompt", name="any")
    assert (await client.complete(tags, {"name": "tag", "value": "#T"})).completion.values == [
        "t0",
        "t1",
        "t2",
    ]
    other = ResourceTemplateReference(type="ref/resource", uri="weaver://elsewhere/{x}")
    assert (await client.complete(other, {"name": "x", "value": ""})).completion.values == []


async def test_completions_of_folders_ignore_case(client: Client) -> None:
    folder = PromptReference(type="ref/prompt", name="summarize_folder")
    done = (await client.complete(folder, {"name": "folder", "value": "N"})).completion
    assert (done.values, done.total, done.has_more) == (["n"], 1, False)


async def test_completions_ignoring_case_follow_edits(tmp_path: Path) -> None:
    root = write_files(tmp_path / "vault", {"Notes/Alpha.md": "a\n", "Notes/beta.md": "b\n"})
    served = serve(Settings(vault=root))
    ref = ResourceTemplateReference(type="ref/resource", uri="weaver://note/{+path}")
    try:
        async with Client(served.server, mode="legacy") as client:

            async def paths(value: str) -> list[str]:
                return (
                    await client.complete(ref, {"name": "path", "value": value})
                ).completion.values

            assert await paths("notes/a") == ["Notes/Alpha.md"]
            (root / "Notes" / "Alpha.md").rename(root / "Notes" / "Alps.md")
            write_files(root, {"Notes/ALPINE.md": "c\n"})
            changed = ["Notes/Alpha.md", "Notes/Alps.md", "Notes/ALPINE.md"]
            await anyio.to_thread.run_sync(served.app.indexer.apply_paths, changed)
            assert await paths("notes/al") == ["Notes/ALPINE.md", "Notes/Alps.md"]
            assert await paths("Notes/AL") == ["Notes/ALPINE.md"]  # as typed first
            folder = PromptReference(type="ref/prompt", name="summarize_folder")
            near = await client.complete(folder, {"name": "folder", "value": "Nots"})
            assert near.completion.values == ["Notes"]  # none starts so: the closest names
    finally:
        served.app.close()


async def test_completions_of_workflow_ids(served: Served) -> None:
    registry = Registry()
    for name in ("daily-review", "Digest", "tagger"):
        registry.register(workflow(id=name, name=name)(lambda ctx: None))
    state = ServerState(served.app, watch=False, engine=engine_for(served.app, registry))
    ref = PromptReference(type="ref/prompt", name="any")
    async with Client(build_server(state), mode="legacy") as client:
        done = (await client.complete(ref, {"name": "workflowId", "value": "d"})).completion
    assert done.values == ["Digest", "daily-review"]


async def test_a_session_that_sets_a_level_hears_of_vault_changes(served: Served) -> None:
    logged: list[Any] = []
    heard = anyio.Event()

    async def on_log(params: Any) -> None:
        logged.append(params)
        heard.set()

    async with Client(served.server, mode="legacy", logging_callback=on_log) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.set_logging_level("info")
        (served.root / "n" / "0003.md").write_text("# logged\n", encoding="utf-8")
        await anyio.to_thread.run_sync(served.app.indexer.apply_paths, ["n/0003.md"])
        with anyio.fail_after(5):
            await heard.wait()
    assert (logged[0].level, logged[0].logger) == ("info", "weaver")
    assert logged[0].data == {"event": "vault changed", "modify": ["n/0003.md"]}
