"""Scopes and folder grants (`[[access]]`): which tools a remote client sees and may call, and
which notes it may read and write. Callers are made as the SDK's bearer auth makes them (its
context variable), through the in-memory client, and once over real HTTP with an OAuth token."""

from __future__ import annotations

import html
import inspect
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import PromptReference, ResourceTemplateReference

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from tests.mcp_server.test_oauth import (
    OWNER,
    authorize,
    consent,
    pkce,
    query_of,
    register,
    served,
    token,
)
from weaver.config import AccessRule, Settings, load_settings
from weaver.errors import ConfigError
from weaver.mcp_server.access import (
    FOLDER_ARGUMENTS,
    NOT_PATH_ARGUMENTS,
    PATH_ARGUMENTS,
    UNFILTERABLE,
    grant_for,
)
from weaver.mcp_server.caller import Caller
from weaver.mcp_server.catalog import ToolSpec, defs_of, tool
from weaver.mcp_server.completions import LogLevels, readable_events
from weaver.mcp_server.server import TOOL_MODULES
from weaver.path_globs import PathGlobs
from weaver.runtime.oauth_server import HTTP_TOKEN_CLIENT, SCOPES, GrantAccessToken
from weaver.vault.events import NoteModified

pytestmark = pytest.mark.anyio

FILES: dict[str, str | bytes] = {
    "Projects/Plan.md": "# Plan\nSee [[Diary]] and [[Ideas]] #work\n- [ ] ship it\n",
    "Projects/Ideas.md": "# Ideas\nplans #work\n",
    "Projects/Inbox/Todo.md": "# Todo\n#work\n- [ ] reply\n",
    "Private/Diary.md": "# Diary\nsecret plans, see [[Plan]] #work\n- [ ] secret task\n",
    ".obsidian/daily-notes.json": '{"folder": "Journal"}',
}
PHONE = "Phone assistant"
RULE = AccessRule(client=PHONE, read=["Projects/**"], write=["Projects/Inbox/**"])
OUTSIDE = "Private/Diary.md"  # neither readable nor writable under RULE
READ_ONLY_NOTE = "Projects/Ideas.md"  # readable, not writable

# Argument names that look like they name a note or a folder: each must be classified in
# `access` (checked, or a folder narrowing a filtered listing), so no new tool slips past.
CLASSIFIED = {*PATH_ARGUMENTS, *FOLDER_ARGUMENTS, *NOT_PATH_ARGUMENTS}
PATH_LIKE = re.compile(r"path|file|folder|director|source|target|template|note", re.IGNORECASE)


def tool_arguments() -> list[tuple[ToolSpec, list[str]]]:
    found = []
    for each in defs_of(*TOOL_MODULES):
        names = list(inspect.signature(each.fn).parameters)[1:]
        if each.spec.arguments is not None:
            names = [f.alias or n for n, f in each.spec.arguments.model_fields.items()]
        found.append((each.spec, names))
    return found


PATH_TOOLS = [
    (spec, name) for spec, names in tool_arguments() for name in names if name in PATH_ARGUMENTS
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Served]:
    root = write_files(tmp_path / "vault", FILES)
    served_ = serve(Settings(vault=root, toolsets=["all"], access=[RULE]))
    yield served_
    served_.app.close()


def caller_named(name: str, scopes: tuple[str, ...] = SCOPES) -> Caller:
    return Caller("oauth", "client-1", name, frozenset(scopes))


@contextmanager
def calling_as(name: str = PHONE, scopes: tuple[str, ...] = SCOPES) -> Iterator[None]:
    """Requests made inside come from an OAuth client of this name holding these scopes."""
    token = GrantAccessToken(
        token="t", client_id="client-1", scopes=list(scopes), grant_id="g", client_name=name
    )
    reset = auth_context_var.set(AuthenticatedUser(token))
    try:
        yield
    finally:
        auth_context_var.reset(reset)


@asynccontextmanager
async def client_of(
    site: Served, name: str = PHONE, scopes: tuple[str, ...] = SCOPES
) -> AsyncIterator[Tools]:
    # The server's tasks start inside, so they inherit the caller set here.
    with calling_as(name, scopes):
        async with Client(site.server, mode="legacy") as client:
            yield Tools(client)


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*.md")}


# -- every tool that takes a path -------------------------------------------------------------


def test_every_path_like_argument_is_classified() -> None:
    unclassified = [
        f"{spec.name}.{name}"
        for spec, names in tool_arguments()
        for name in names
        if PATH_LIKE.search(name)
        and name not in {*PATH_ARGUMENTS, *FOLDER_ARGUMENTS, *NOT_PATH_ARGUMENTS}
    ]
    assert unclassified == [], "add them to access.PATH_ARGUMENTS or FOLDER_ARGUMENTS"
    assert len(PATH_TOOLS) >= 25  # the check below covers the tools that take a path


@pytest.mark.parametrize(
    ("spec", "argument"), PATH_TOOLS, ids=[f"{s.name}.{a}" for s, a in PATH_TOOLS]
)
async def test_a_path_outside_the_clients_folders_is_refused(
    site: Served, spec: ToolSpec, argument: str
) -> None:
    before = snapshot(site.root)
    one = "paths" in argument
    async with client_of(site) as tools:
        error = await tools.error(spec.name, **{argument: [OUTSIDE] if one else OUTSIDE})
        assert error.startswith("Access denied: ")
        if spec.name in UNFILTERABLE:  # not offered to a client reading only some folders
            assert f"{spec.name} is not offered to this client" in error
            return
        assert repr(OUTSIDE) in error and "access[0]" in error and repr(PHONE) in error
        assert "'Projects/**'" in error or "'Projects/Inbox/**'" in error
        if spec.writes and PATH_ARGUMENTS[argument]:
            # Readable is not enough to write: the rule's write globs name the folders.
            value = [READ_ONLY_NOTE] if one else READ_ONLY_NOTE
            error = await tools.error(spec.name, **{argument: value})
            assert "outside the folders this client may write" in error
            assert "write = ['Projects/Inbox/**']" in error and "nothing was changed" in error
    assert snapshot(site.root) == before


async def test_inside_its_folders_a_client_reads_and_writes(site: Served) -> None:
    async with client_of(site) as tools:
        assert "ship it" in (await tools.ok("get_file_content", path="Projects/Plan.md"))["content"]
        await tools.ok(
            "edit_file", path="Projects/Inbox/Todo.md", position="append", content="- [ ] more"
        )
        await tools.ok("move_file", path="Projects/Inbox/Todo.md", newPath="Projects/Inbox/A.md")
        error = await tools.error(
            "move_file", path="Projects/Inbox/A.md", newPath="Projects/Ideas2.md"
        )
        assert "'newPath' is" not in error and "Projects/Ideas2.md" in error
    assert "- [ ] more" in (site.root / "Projects/Inbox/A.md").read_text()
    assert (site.root / "Projects/Inbox/A.md").exists()


async def test_a_bulk_edit_touching_a_note_outside_is_refused_before_any_change(
    site: Served,
) -> None:
    before = snapshot(site.root)
    wide = RULE.model_copy(update={"write": ["Projects/**"]})
    settings = Settings(vault=site.root, toolsets=["all"], access=[wide])
    wider = serve(settings)
    try:
        async with client_of(wider) as tools:
            error = await tools.error("rename_tag", tag="work", newTag="job")
            assert "rename_tag would change 1 note it may not read" in error
            assert "write = ['Projects/**']" in error and OUTSIDE not in error
            # A rename rewrites the links to the note: Private/Diary.md links to [[Plan]].
            error = await tools.error(
                "move_file", path="Projects/Plan.md", newPath="Projects/Plan2.md"
            )
            assert "move_file would rewrite links in 1 note it may not read" in error
            error = await tools.error("append_to_daily_note", text="hello")
            assert "the day's note 'Journal/" in error
            error = await tools.error("append_to_periodic_note", period="day", text="hi")
            assert "the day's note 'Journal/" in error
            dry = await tools.ok("rename_tag", tag="work", newTag="job", dryRun=True)
            assert {c["path"] for c in dry["changes"]} <= {
                "Projects/Plan.md",
                "Projects/Ideas.md",
                "Projects/Inbox/Todo.md",
            }
    finally:
        wider.app.close()
    assert snapshot(site.root) == before


async def test_a_confirmation_names_no_note_outside_the_clients_folders(
    tmp_path: Path,
) -> None:
    """The question of a destructive call goes to the client (here, in the refusal of a client
    that cannot be asked): notes outside its folders are counted, not named."""
    root = write_files(tmp_path / "vault", FILES)
    wide = RULE.model_copy(update={"write": ["Projects/**"]})
    site = serve(
        Settings(vault=root, toolsets=["all"], access=[wide], confirm_destructive="refuse")
    )
    try:
        async with client_of(site) as tools:
            error = await tools.error("delete_file", path="Projects/Plan.md")
            assert "those links will be broken: 1 note this client may not read." in error
            assert OUTSIDE not in error
        async with Client(site.server) as local:
            error = await Tools(local).error("delete_file", path="Projects/Plan.md")
            assert f"those links will be broken: {OUTSIDE}." in error
    finally:
        site.app.close()
    assert (root / "Projects/Plan.md").exists()


# -- listings ---------------------------------------------------------------------------------


async def test_listings_leave_out_notes_outside_the_read_folders(site: Served) -> None:
    async with client_of(site) as tools:
        files = await tools.ok("query_files", limit=50)
        assert {f["path"] for f in files["files"]} == {
            "Projects/Plan.md",
            "Projects/Ideas.md",
            "Projects/Inbox/Todo.md",
        }
        found = await tools.ok("search_notes", query="plans")
        assert "Projects/Ideas.md" in [r["path"] for r in found["results"]]
        assert OUTSIDE not in str(found)
        links = await tools.ok("search_links", path="Projects/Plan.md", direction="both")
        assert OUTSIDE not in str(links)
        tasks = await tools.ok("query_tasks")
        assert "secret task" not in str(tasks) and "ship it" in str(tasks)
        tagged = await tools.ok("search_tags", tag="work")
        assert OUTSIDE not in str(tagged) and "Projects/Plan.md" in str(tagged)
        for _ in range(12):  # a random note outside is refused without its name
            envelope = await tools.raw("random_file", {})
            assert OUTSIDE not in str(envelope) and "secret" not in str(envelope)
        graph = await tools.ok("get_graph")
        assert OUTSIDE not in str(graph) and "Projects/Plan.md" in str(graph)
    async with Client(site.server) as local:  # the local user sees everything
        answer = await local.call_tool("search_notes", {"query": "plans"})
        assert OUTSIDE in str(answer.structured_content)


async def test_tools_that_cannot_be_filtered_are_withheld_with_why(site: Served) -> None:
    async with client_of(site) as tools:
        listed = {t.name for t in (await tools.client.list_tools()).tools}
        assert not listed & set(UNFILTERABLE)
        assert "trigger_workflow" not in listed  # its workflows write anywhere
        error = await tools.error("get_stats")
        assert "counts and folders cover the whole vault" in error and "access[0]" in error
        with pytest.raises(MCPError, match="whole vault"):
            await tools.client.get_prompt("triage_broken_links", {})


async def test_resources_follow_the_read_folders(site: Served) -> None:
    async with client_of(site) as tools:
        listed = [str(r.uri) for r in (await tools.client.list_resources()).resources]
        assert "weaver://note/Projects/Plan.md" in listed
        assert not [uri for uri in listed if "Private" in uri or "vault/" in uri]
        read = await tools.client.read_resource("weaver://note/Projects/Plan.md")
        assert "ship it" in read.contents[0].text  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="outside the folders this client may read"):
            await tools.client.read_resource("weaver://note/Private/Diary.md")
        with (
            pytest.warns(MCPDeprecationWarning),  # the 2025 protocols' subscription
            pytest.raises(MCPError, match="outside the folders this client may read"),
        ):
            await tools.client.subscribe_resource("weaver://note/Private/Diary.md")
        template = ResourceTemplateReference(type="ref/resource", uri="weaver://note/{+path}")
        done = await tools.client.complete(template, {"name": "path", "value": "P"})
        assert done.completion.values == [
            "Projects/Ideas.md",
            "Projects/Inbox/Todo.md",
            "Projects/Plan.md",
        ]
        prompt = PromptReference(type="ref/prompt", name="summarize_folder")
        done = await tools.client.complete(prompt, {"name": "folder", "value": ""})
        assert done.completion.values == []  # every folder of the vault: not for it
    async with Client(site.server) as local:
        done = await local.complete(template, {"name": "path", "value": "P"})
        assert OUTSIDE in done.completion.values


def test_a_confined_client_hears_only_of_changes_it_may_read() -> None:
    grant = grant_for(Settings(vault=Path(), access=[RULE]), caller_named(PHONE))
    changes = {"modified": ["Private/Diary.md", "Projects/Plan.md"], "deleted": [OUTSIDE]}
    assert readable_events(grant, changes) == {
        "event": "vault changed",
        "modified": ["Projects/Plan.md"],
    }
    blind = grant_for(Settings(vault=Path()), caller_named(PHONE, ("weaver:write",)))
    assert readable_events(blind, changes) == {"event": "vault changed"}


async def test_a_confined_client_does_not_narrow_what_the_others_hear() -> None:
    """Each connection hears its own message: the confined one first must not leave its
    filtered message to the unconfined one after it."""

    class Listener:
        def __init__(self) -> None:
            self.heard: list[Any] = []

        async def log(self, level: str, data: Any, logger: str | None = None) -> None:
            self.heard.append(data)

    confined, owner = Listener(), Listener()
    levels = LogLevels()
    levels.by_client[confined] = "info"  # type: ignore[index]
    levels.by_client[owner] = "info"  # type: ignore[index]
    levels.grants[confined] = grant_for(  # type: ignore[index]
        Settings(vault=Path(), access=[RULE]), caller_named(PHONE)
    )
    await levels.tell([NoteModified("Projects/Plan.md"), NoteModified(OUTSIDE)])
    assert confined.heard == [{"event": "vault changed", "modify": ["Projects/Plan.md"]}]
    assert owner.heard == [{"event": "vault changed", "modify": ["Projects/Plan.md", OUTSIDE]}]


async def test_a_rule_for_http_token_confines_scripts(tmp_path: Path) -> None:
    root = write_files(tmp_path / "vault", FILES)
    scripts = AccessRule(client="http_token", read=["Projects/**", "*.md"], write=[])
    site = serve(Settings(vault=root, toolsets=["all"], access=[RULE, scripts]))
    script = AccessToken(token="t", client_id=HTTP_TOKEN_CLIENT, scopes=[])
    reset = auth_context_var.set(AuthenticatedUser(script))
    try:
        async with Client(site.server, mode="legacy") as client:
            tools = Tools(client)
            await tools.ok("get_file", path="Projects/Plan.md")
            error = await tools.error("delete_file", path="Projects/Plan.md")
            assert "access[1] for client 'http_token': write = [none]" in error
            # "Did you mean" names no note outside its folders.
            missing = await tools.error("get_file", path="Diary.md")
            assert "File not found" in missing and "Private" not in missing
    finally:
        auth_context_var.reset(reset)
    async with Client(site.server) as local:
        missing = await Tools(local).error("get_file", path="Diary.md")
        assert "did you mean 'Private/Diary.md'" in missing
    site.app.close()
    assert (root / "Projects/Plan.md").exists()


# -- scopes -----------------------------------------------------------------------------------


def test_a_tools_scope_follows_what_it_does() -> None:
    scopes = {each.spec.name: each.spec.required_scope for each in defs_of(*TOOL_MODULES)}
    assert scopes["get_file"] == "weaver:read"
    assert scopes["create_file"] == scopes["rename_tag"] == "weaver:write"
    assert scopes["trigger_workflow"] == "weaver:workflows"
    assert scopes["list_workflows"] == "weaver:read"
    assert scopes["get_audit_log"] == "weaver:admin"

    @tool("Audit", "Who changed what.", toolset="system", scope="admin")
    def get_audit(state: object) -> None: ...

    assert get_audit.spec.required_scope == "weaver:admin"


async def test_a_client_without_a_scope_neither_sees_nor_calls_its_tools(
    site: Served,
) -> None:
    async with client_of(site, "Other client", ("weaver:read",)) as tools:
        listed = {t.name for t in (await tools.client.list_tools()).tools}
        assert "get_stats" in listed  # no rule names it: every folder
        assert not listed & {"create_file", "edit_file", "rename_tag", "trigger_workflow"}
        error = await tools.error("create_file", path="New.md", content="x")
        assert "needs the scope 'weaver:write'" in error
        assert "grant 'weaver:write' on the consent page" in error
    assert not (site.root / "New.md").exists()
    async with client_of(site, "Other client", ("weaver:write",)) as tools:
        assert (await tools.client.list_resources()).resources == []
        with pytest.raises(MCPError, match="needs the scope 'weaver:read'"):
            await tools.client.get_prompt("triage_broken_links", {})


async def test_a_rule_caps_the_scopes_of_its_client(tmp_path: Path) -> None:
    root = write_files(tmp_path / "vault", FILES)
    capped = AccessRule(client="*", scopes=["read"])
    site = serve(Settings(vault=root, toolsets=["all"], access=[capped]))
    try:
        async with client_of(site) as tools:
            error = await tools.error("delete_file", path="Projects/Plan.md")
            assert "access[0] for client '*' leaves out" in error
        async with Client(site.server) as local:  # never limited
            assert "delete_file" in {t.name for t in (await local.list_tools()).tools}
    finally:
        site.app.close()
    assert (root / "Projects/Plan.md").exists()


# -- the rules in the config ------------------------------------------------------------------


def test_folder_globs_match_as_documented() -> None:
    globs = PathGlobs.of(["Projects/**", "Journal", "**/Drafts/*.md"])
    assert globs.matches("Projects/a/b.md") and globs.matches("projects/A.md")
    assert globs.matches("Journal") and globs.matches("Journal/2026/x.md")
    assert globs.matches("Drafts/x.md") and globs.matches("a/b/Drafts/x.md")
    assert not globs.matches("Projects") and not globs.matches("Journals/x.md")
    assert not globs.matches("Projects/../Private/x.md") and not globs.matches("a/Drafts/b/x.md")
    assert PathGlobs.of(["**"]).everything and not PathGlobs.of([]).matches("x.md")


def test_a_bad_rule_is_refused_at_load_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "weaver.toml"
    config.write_text(
        f'vault = "{tmp_path}"\n[[access]]\nclient = "claude"\nwrite = ["Inbox/**", "../up"]\n'
    )
    with pytest.raises(ConfigError) as raised:
        load_settings(config)
    message = str(raised.value)
    assert "'access.0.write'" in message and "'../up'" in message and "'claude'" in message
    config.write_text(f'vault = "{tmp_path}"\n[[access]]\nclient = "c"\nscopes = ["root"]\n')
    with pytest.raises(ConfigError, match="unknown scope 'root'"):
        load_settings(config)


# -- over real HTTP, with an OAuth token ------------------------------------------------------


async def test_an_oauth_clients_folders_and_scopes_over_http(tmp_path: Path) -> None:
    root = write_files(tmp_path / "vault", FILES)
    async with served(root, access=[RULE.model_dump()]) as site:
        client_id = await register(site)
        verifier, challenge = pkce()
        sent = await authorize(site, client_id, challenge, scope="weaver:read weaver:write")
        back = await consent(site, sent.headers["location"])
        code = query_of(back.headers["location"])["code"]
        tokens = (await token(site, client_id, code=code, code_verifier=verifier)).json()
        headers = {"authorization": f"Bearer {tokens['access_token']}"}
        async with httpx2.AsyncClient(headers=headers, timeout=10) as http_client:
            transport = streamable_http_client(site.mcp, http_client=http_client)
            async with Client(transport) as client:
                tools = Tools(client)
                listed = {t.name for t in (await client.list_tools()).tools}
                assert "create_file" in listed and "get_stats" not in listed
                files = await tools.ok("query_files")
                assert OUTSIDE not in str(files) and "Projects/Plan.md" in str(files)
                error = await tools.error("create_file", path="Private/New.md", content="x")
                assert "access[0] for client 'Phone assistant'" in error
                await tools.ok("create_file", path="Projects/Inbox/New.md", content="x")
    assert (root / "Projects/Inbox/New.md").exists() and not (root / "Private/New.md").exists()


async def test_the_owner_leaves_a_scope_out_on_the_consent_page(tmp_path: Path) -> None:
    root = write_files(tmp_path / "vault", FILES)
    async with served(root) as site:
        client_id = await register(site)
        verifier, challenge = pkce()
        sent = await authorize(site, client_id, challenge)  # asks for every scope
        page = await site.http.get(sent.headers["location"])
        assert 'name="withhold:weaver:write"' in page.text
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
        form = {**{k: html.unescape(v) for k, v in fields.items()}, "secret": OWNER}
        everything = {**form, "decision": "allow", **{f"withhold:{s}": "1" for s in SCOPES}}
        refused = await site.http.post(
            site.base + "/oauth/consent", data=everything, headers={"origin": site.base}
        )
        assert refused.status_code == 400 and "press Deny instead" in refused.text
        form |= {"decision": "allow", "withhold:weaver:write": "1"}
        back = await site.http.post(
            site.base + "/oauth/consent", data=form, headers={"origin": site.base}
        )
        code = query_of(back.headers["location"])["code"]
        tokens = (await token(site, client_id, code=code, code_verifier=verifier)).json()
        assert tokens["scope"].split() == ["weaver:read", "weaver:workflows", "weaver:admin"]
        headers = {"authorization": f"Bearer {tokens['access_token']}"}
        async with httpx2.AsyncClient(headers=headers, timeout=10) as http_client:
            transport = streamable_http_client(site.mcp, http_client=http_client)
            async with Client(transport) as client:
                listed = {t.name for t in (await client.list_tools()).tools}
                assert "get_file" in listed and "create_file" not in listed
                error = await Tools(client).error("create_file", path="New.md", content="x")
                assert "needs the scope 'weaver:write'" in error
    assert not (root / "New.md").exists()
