"""One server, several vaults (`[vaults.NAME]`): every tool takes `vault`, each vault answers
from its own cache and watcher, search spans them, and resources carry the vault in their URI.
A server of one vault lists no `vault` argument at all."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import PromptReference, ResourceTemplateReference

import weaver
from tests.attachments.pdfs import text_pdf
from tests.helpers import logged, wait_for_async, write_files
from tests.mcp_server.test_access import PHONE, calling_as
from tests.mcp_server.test_cache_tools import Tools
from tests.mcp_server.test_toolsets import LIST_BUDGET, PROSE_BUDGET, size
from weaver.config import AccessRule, Settings, VaultEntry
from weaver.index.attachment_text import extract_pending
from weaver.mcp_server import build_server
from weaver.runtime.app import App, open_app
from weaver.runtime.state import ServerState
from weaver.toolsets import DEFAULT_TOOLSETS

pytestmark = pytest.mark.anyio

WEAVER = str(Path(sys.executable).with_name("weaver"))
CHECKOUT = Path(weaver.__file__).parents[1]

WORK = {
    "Plan.md": "# Plan\nThe quarterly plan mentions zebra once.\n",
    "work-only.md": "# Work only\n",
}
HOME = {
    "Garden.md": "# Garden\nzebra zebra zebra in the garden title words.\n",
    "Zebra.md": "# Zebra\nzebra\n",
    "home-only.md": "# Home only\n",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Vaults:
    server: MCPServer[ServerState]
    apps: dict[str, App]
    roots: dict[str, Path]


def two_vault_settings(base: Path) -> Settings:
    roots = {"work": write_files(base / "work", WORK), "home": write_files(base / "home", HOME)}
    entries = {name: VaultEntry(path=root) for name, root in roots.items()}
    return Settings(vault=roots["work"], vaults=entries, default_vault="work")


def serve_vaults(settings: Settings, watch: bool = False) -> Vaults:
    # The default vault keeps the settings naming every vault.
    apps = {
        name: open_app(settings if name == "work" else settings.for_vault(name))
        for name in settings.vaults
    }
    states = {}
    for name, app in apps.items():
        if not watch:
            app.indexer.reconcile()
        states[name] = ServerState(app, watch=watch)
    server = build_server(states["work"], vaults=states)
    return Vaults(server, apps, {name: e.path for name, e in settings.vaults.items()})


@pytest.fixture(scope="module")
def vaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vaults]:
    served = serve_vaults(two_vault_settings(tmp_path_factory.mktemp("vaults")))
    yield served
    for app in served.apps.values():
        app.close()


@asynccontextmanager
async def tools_of(server: MCPServer[ServerState], **kwargs: Any) -> AsyncIterator[Tools]:
    async with Client(server, mode="legacy", **kwargs) as client:
        yield Tools(client)


@pytest.fixture
async def tools(vaults: Vaults) -> AsyncIterator[Tools]:
    async with tools_of(vaults.server) as tools:
        yield tools


def paths(envelope: dict[str, Any]) -> list[str]:
    assert envelope["success"], envelope
    return sorted(f["path"] for f in envelope["data"]["files"])


async def test_every_tool_lists_the_vault_argument(tools: Tools) -> None:
    listed = (await tools.client.list_tools()).tools
    assert listed
    for tool in listed:
        assert "vault" in tool.input_schema["properties"], tool.name
    search = next(t for t in listed if t.name == "search_notes")
    assert search.input_schema["properties"]["vault"]["description"] == "'*': every vault"
    assert "several vaults: work, home" in (tools.client.instructions or "")
    assert "(work when left out)" in (tools.client.instructions or "")


async def test_one_vault_lists_no_vault_argument(tmp_path: Path) -> None:
    root = write_files(tmp_path / "v", WORK)
    app = open_app(Settings(vault=root))
    try:
        async with tools_of(build_server(ServerState(app, watch=False))) as tools:
            listed = (await tools.client.list_tools()).tools
            assert all("vault" not in t.input_schema.get("properties", {}) for t in listed)
            refused = await tools.raw("query_files", {"vault": "work"})
            assert not refused["success"] and "vault: not an argument" in refused["error"]
    finally:
        app.close()


async def test_a_call_answers_from_the_vault_it_names(tools: Tools) -> None:
    assert paths(await tools.raw("query_files", {})) == ["Plan.md", "work-only.md"]
    assert paths(await tools.raw("query_files", {"vault": "work"})) == ["Plan.md", "work-only.md"]
    home = paths(await tools.raw("query_files", {"vault": "home"}))
    assert home == ["Garden.md", "Zebra.md", "home-only.md"]
    text = await tools.raw("get_file_content", {"path": "home-only.md", "vault": "home"})
    assert text["success"] and "# Home only" in json.dumps(text["data"])
    missing = await tools.raw("get_file_content", {"path": "home-only.md"})
    assert not missing["success"] and "File not found" in missing["error"]


async def test_a_tools_help_says_what_vault_takes(tools: Tools) -> None:
    query = (await tools.client.read_resource("weaver://help/query_files")).contents[0]
    assert "several vaults: work (the default), home" in query.text  # type: ignore[union-attr]
    search = (await tools.client.read_resource("weaver://help/search_notes")).contents[0]
    assert "'*' searches every vault" in search.text  # type: ignore[union-attr]


async def test_an_unknown_vault_is_refused_naming_the_vaults(tools: Tools) -> None:
    refused = await tools.raw("query_files", {"vault": "hom"})
    assert not refused["success"]
    assert refused["error"] == "Unknown vault: 'hom' (did you mean 'home'?). The vaults: work, home"
    nowhere = await tools.raw("query_files", {"vault": "*"})
    assert nowhere["error"] == "Unknown vault: '*'. The vaults: work, home"


async def test_search_spans_every_vault_merged_by_score(tools: Tools) -> None:
    answer = await tools.raw("search_notes", {"query": "zebra", "vault": "*", "mode": "keyword"})
    assert answer["success"], answer
    data = answer["data"]
    hits = [(h["vault"], h["path"]) for h in data["results"]]
    assert sorted(hits) == [("home", "Garden.md"), ("home", "Zebra.md"), ("work", "Plan.md")]
    scores = [h["score"] for h in data["results"]]
    assert scores == sorted(scores, reverse=True)
    assert (data["total"], data["hasMore"]) == (3, False)
    paged = []
    for offset in range(3):
        page = await tools.raw(
            "search_notes",
            {"query": "zebra", "vault": "*", "mode": "keyword", "limit": 1, "offset": offset},
        )
        paged += [(h["vault"], h["path"]) for h in page["data"]["results"]]
        assert page["data"]["hasMore"] is (offset < 2)
    assert paged == hits
    only_home = await tools.raw("search_notes", {"query": "zebra", "vault": "home"})
    assert sorted(h["path"] for h in only_home["data"]["results"]) == ["Garden.md", "Zebra.md"]


async def test_search_of_every_vault_merges_their_pdfs_each_read_in_its_vault(
    tmp_path: Path,
) -> None:
    """Each vault's PDFs come in `attachments`, merged by score and paged like the notes,
    each naming its vault, and its `readWith` call reads the page from that vault."""
    vaults = two_vault_settings(tmp_path).vaults  # get_attachment is not served by default:
    settings = Settings(
        vault=vaults["work"].path, vaults=vaults, default_vault="work", toolsets=["all"]
    )
    (settings.vaults["work"].path / "budget.pdf").write_bytes(
        text_pdf(["Cover", "The zebra crossing budget"])
    )
    (settings.vaults["home"].path / "safari.pdf").write_bytes(
        text_pdf(["zebra zebra zebra herds", "More zebra"])
    )
    served = serve_vaults(settings)
    try:
        for app in served.apps.values():
            assert extract_pending(app.db, app.vault) == 1
        async with tools_of(served.server) as tools:
            args = {"query": "zebra", "vault": "*", "mode": "keyword"}
            data = await tools.ok("search_notes", **args)
            pdfs = [(h["vault"], h["path"], h["page"]) for h in data["attachments"]]
            assert sorted(pdfs) == [("home", "safari.pdf", 1), ("work", "budget.pdf", 2)]
            scores = [h["score"] for h in data["attachments"]]
            assert scores == sorted(scores, reverse=True)
            assert (data["attachmentTotal"], data["attachmentText"]) == (2, None)
            # Read as the hit says: the work vault's PDF is not in the default's place.
            work_hit = next(h for h in data["attachments"] if h["vault"] == "work")
            assert work_hit["readWith"] == (
                'get_attachment {"path": "budget.pdf", "page": 2, "vault": "work"}'
            )
            home_hit = next(h for h in data["attachments"] if h["vault"] == "home")
            name, call = home_hit["readWith"].split(" ", 1)
            page = await tools.ok(name, **json.loads(call))
            assert "zebra zebra zebra herds" in page["text"]
            # Paged like the notes: one PDF a page, each once, more said while there are.
            paged = []
            for offset in range(2):
                one = await tools.ok("search_notes", **args, limit=1, offset=offset)
                paged += [(h["vault"], h["path"], h["page"]) for h in one["attachments"]]
                assert one["attachmentTotal"] == 2
            assert paged == pdfs
            last = await tools.ok("search_notes", **args, limit=3, offset=1)
            assert (len(last["attachments"]), last["hasMore"]) == (1, False)
    finally:
        for app in served.apps.values():
            app.close()


async def test_a_vaults_resource_is_read_by_its_uri(tools: Tools) -> None:
    client = tools.client
    note = (await client.read_resource("weaver://vaults/home/note/home-only.md")).contents[0]
    assert str(note.uri) == "weaver://vaults/home/note/home-only.md"
    assert note.text == "# Home only\n"  # type: ignore[union-attr]
    stats = (await client.read_resource("weaver://vaults/home/vault/stats")).contents[0]
    assert json.loads(stats.text)["totalFiles"] == 3  # type: ignore[union-attr]
    default = (await client.read_resource("weaver://note/work-only.md")).contents[0]
    assert default.text == "# Work only\n"  # type: ignore[union-attr]
    with pytest.raises(MCPError, match=r"Unknown vault in the URI: 'hme' \(did you mean 'home'"):
        await client.read_resource("weaver://vaults/hme/note/home-only.md")
    templates = (await client.list_resource_templates()).resource_templates
    assert "weaver://vaults/{vault}/note/{+path}" in [t.uri_template for t in templates]


async def test_a_subscriber_hears_of_its_vaults_note_only(tmp_path: Path) -> None:
    vaults = serve_vaults(two_vault_settings(tmp_path))  # its own: it changes both vaults
    try:
        await hear_of_home_garden(vaults)
    finally:
        for app in vaults.apps.values():
            app.close()


async def hear_of_home_garden(vaults: Vaults) -> None:
    heard: list[str] = []
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/resources/updated":
            heard.append(str(root.params.uri))
            changed.set()

    async with tools_of(vaults.server, message_handler=on_message) as tools:
        with pytest.warns(MCPDeprecationWarning):
            await tools.client.subscribe_resource("weaver://vaults/home/note/Garden.md")
        # The same path in the default vault changes first: not what was subscribed to.
        (vaults.roots["work"] / "Garden.md").write_text("# work garden\n", encoding="utf-8")
        await anyio.to_thread.run_sync(vaults.apps["work"].indexer.apply_paths, ["Garden.md"])
        (vaults.roots["home"] / "Garden.md").write_text("# edited\n", encoding="utf-8")
        await anyio.to_thread.run_sync(vaults.apps["home"].indexer.apply_paths, ["Garden.md"])
        with anyio.fail_after(5):
            await changed.wait()
        assert heard == ["weaver://vaults/home/note/Garden.md"]


async def test_a_file_written_into_a_vault_is_seen_by_its_watcher_only(tmp_path: Path) -> None:
    served = serve_vaults(two_vault_settings(tmp_path), watch=True)
    try:
        async with tools_of(served.server) as tools:
            write_files(served.roots["home"], {"fresh.md": "# Fresh\n"})
            with anyio.fail_after(20):
                while "fresh.md" not in paths(await tools.raw("query_files", {"vault": "home"})):
                    await anyio.sleep(0.05)
            assert "fresh.md" not in paths(await tools.raw("query_files", {}))
    finally:
        for app in served.apps.values():
            app.close()


async def test_weaver_serve_over_stdio_serves_the_configs_vaults(tmp_path: Path) -> None:
    """The real process: `weaver serve` reads [vaults.NAME] from its config file, watches each
    vault and runs each one's workflows against its own files."""
    write_files(tmp_path / "work", WORK)
    write_files(tmp_path / "home", HOME)
    config = tmp_path / "weaver.toml"
    config.write_text(
        'default_vault = "work"\n[vaults.work]\npath = "work"\n[vaults.home]\npath = "home"\n',
        encoding="utf-8",
    )
    params = StdioServerParameters(
        command=WEAVER,
        args=["--config", str(config), "serve", "--toolsets", "all"],
        cwd=tmp_path,
        # PYTHONPATH passed on: the code under test, where it is not the installed one.
        env={
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(Path(weaver.__file__).parents[1]),
        },
    )
    with (tmp_path / "stderr.log").open("w") as log:
        async with Client(stdio_client(params, errlog=log), mode="legacy") as client:
            tools = Tools(client)
            assert "several vaults: work, home" in (client.instructions or "")
            listed = (await client.list_tools()).tools
            assert all("vault" in t.input_schema["properties"] for t in listed)
            home = paths(await tools.raw("query_files", {"vault": "home"}))
            assert home == ["Garden.md", "Zebra.md", "home-only.md"]
            await wait_for_async(logged(tmp_path / "stderr.log", "watching vault"), 10)
            write_files(tmp_path / "home", {"fresh.md": "# Fresh\n"})
            with anyio.fail_after(20):
                while "fresh.md" not in paths(await tools.raw("query_files", {"vault": "home"})):
                    await anyio.sleep(0.05)
            args = {"workflowId": "markdown-analyzer", "input": {"path": "home-only.md"}}
            run = await tools.raw("trigger_workflow", {**args, "vault": "home"})
            elsewhere = await tools.raw("trigger_workflow", args)
    assert (run["data"]["status"], run["data"]["result"]["path"]) == ("completed", "home-only.md")
    assert elsewhere["data"]["status"] == "failed"  # the default vault has no such note
    # A reader (`--no-vault`) of the same config answers from each vault's cache as built.
    reader = params.model_copy(update={"args": [*params.args, "--no-vault"]})
    with (tmp_path / "reader.log").open("w") as log:
        async with Client(stdio_client(reader, errlog=log), mode="legacy") as client:
            tools = Tools(client)
            assert "fresh.md" in paths(await tools.raw("query_files", {"vault": "home"}))
            assert "Plan.md" in paths(await tools.raw("query_files", {}))
            found = await tools.raw("search_notes", {"query": "zebra", "vault": "*"})
    hits = {(hit["vault"], hit["path"]) for hit in found["data"]["results"]}
    assert hits == {("work", "Plan.md"), ("home", "Garden.md"), ("home", "Zebra.md")}


async def test_every_vaults_tools_take_the_vault_argument(tools: Tools) -> None:
    refused = await tools.raw("query_files", {"vault": "home", "bogus": 1})
    assert not refused["success"] and "bogus: not an argument of query_files" in refused["error"]
    assert refused["error"].endswith(", vault)")  # the arguments it takes, as listed


async def test_other_vaults_resources_are_listed_and_completed(tools: Tools) -> None:
    client = tools.client
    first = [str(r.uri) for r in (await client.list_resources()).resources]
    assert "weaver://vaults/home/vault/stats" in first
    assert "weaver://vaults/home/tasks/today" in first
    assert "weaver://note/Plan.md" in first and "weaver://note/Garden.md" not in first
    ref = ResourceTemplateReference(type="ref/resource", uri="weaver://vaults/{vault}/note/{+path}")
    vault = (await client.complete(ref, {"name": "vault", "value": "h"})).completion
    assert vault.values == ["home"]
    path = await client.complete(ref, {"name": "path", "value": "Gar"}, {"vault": "home"})
    assert path.completion.values == ["Garden.md"]
    default = await client.complete(ref, {"name": "path", "value": "Pl"})
    assert default.completion.values == ["Plan.md"]


async def test_a_prompt_is_built_from_the_vault_it_names(tools: Tools) -> None:
    client = tools.client
    listed = (await client.list_prompts()).prompts
    assert listed and all("vault" in [a.name for a in p.arguments or []] for p in listed)
    home = await client.get_prompt("summarize_folder", {"folder": "", "vault": "home"})
    text = home.messages[0].content.text  # type: ignore[union-attr]
    assert "Garden.md" in text and "Plan.md" not in text
    work = await client.get_prompt("summarize_folder", {"folder": ""})
    text = work.messages[0].content.text  # type: ignore[union-attr]
    assert "Plan.md" in text and "Garden.md" not in text
    with pytest.raises(MCPError, match=r"Unknown vault: 'hom'.*did you mean 'home'"):
        await client.get_prompt("summarize_folder", {"folder": "", "vault": "hom"})
    ref = PromptReference(type="ref/prompt", name="connect_note")
    vault = (await client.complete(ref, {"name": "vault", "value": "w"})).completion
    assert vault.values == ["work"]
    path = await client.complete(ref, {"name": "path", "value": "Gar"}, {"vault": "home"})
    assert path.completion.values == ["Garden.md"]


async def test_one_vaults_prompts_take_no_vault(tmp_path: Path) -> None:
    app = open_app(Settings(vault=write_files(tmp_path / "v", WORK)))
    try:
        async with tools_of(build_server(ServerState(app, watch=False))) as tools:
            listed = (await tools.client.list_prompts()).prompts
            assert all("vault" not in [a.name for a in p.arguments or []] for p in listed)
    finally:
        app.close()


async def test_a_clients_rate_limit_counts_its_calls_in_every_vault(tmp_path: Path) -> None:
    settings = two_vault_settings(tmp_path).model_copy(
        update={"rate_limit_search": 1, "rate_limit_local": True}
    )
    served = serve_vaults(settings)
    try:
        async with tools_of(served.server) as tools:
            args = {"query": "zebra", "mode": "keyword"}
            assert (await tools.raw("search_notes", args))["success"]
            again = await tools.raw("search_notes", {**args, "vault": "home"})
            assert not again["success"] and "rate limit" in again["error"].lower()
    finally:
        for app in served.apps.values():
            app.close()


async def test_the_vault_argument_keeps_the_default_list_in_its_budget(tmp_path: Path) -> None:
    """Many vaults with long names: the list's size does not grow with them."""
    settings = two_vault_settings(tmp_path)
    many = {
        f"extra-{'x' * 40}-{i}": VaultEntry(path=write_files(tmp_path / f"extra{i}", {}))
        for i in range(4)
    }
    update = {"toolsets": list(DEFAULT_TOOLSETS), "vaults": {**settings.vaults, **many}}
    settings = settings.model_copy(update=update)
    served = serve_vaults(settings)
    try:
        async with tools_of(served.server) as tools:
            listed = await tools.client.list_tools()
    finally:
        for app in served.apps.values():
            app.close()
    wire = listed.model_dump_json(by_alias=True, exclude_none=True)
    described = json.loads(wire)["tools"]
    prose = sum(len(t["description"].encode()) + size(t["inputSchema"]) for t in described)
    assert len(wire.encode()) <= LIST_BUDGET and prose <= PROSE_BUDGET, (len(wire), prose)


async def test_an_access_rule_confines_a_client_in_every_vault(tmp_path: Path) -> None:
    settings = two_vault_settings(tmp_path)
    write_files(settings.vaults["home"].path, {"Public/a.md": "# A\n", "Private/b.md": "# B\n"})
    rule = AccessRule(client=PHONE, read=["Public/**"])
    served = serve_vaults(settings.model_copy(update={"access": [rule]}))
    try:
        with calling_as(PHONE):
            async with tools_of(served.server) as tools:
                listed = paths(await tools.raw("query_files", {"vault": "home"}))
                assert listed == ["Public/a.md"]
                read = await tools.raw("get_file", {"path": "Public/a.md", "vault": "home"})
                assert read["success"], read
                hidden = await tools.raw("get_file", {"path": "Private/b.md", "vault": "home"})
                assert not hidden["success"] and "access" in hidden["error"]
                args = {"path": "Public/a.md", "newPath": "Private/a.md", "vault": "home"}
                moved = await tools.raw("move_file", args)
                assert not moved["success"] and "access" in moved["error"]
        assert (settings.vaults["home"].path / "Public" / "a.md").is_file()
    finally:
        for app in served.apps.values():
            app.close()
