"""`build_server`: Weaver's tools on an `MCPServer`, with a lifespan that keeps the cache fresh."""

from __future__ import annotations

import functools
import hmac
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import anyio.to_thread
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import ProtectedResourceMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, GetPromptResult, InputRequiredResult
from mcp_types import Prompt as MCPPrompt
from mcp_types import PromptArgument as MCPPromptArgument
from mcp_types import Tool as MCPTool

import weaver
from weaver.config import TOOLSETS, Settings, Toolset
from weaver.errors import did_you_mean, suggest
from weaver.mcp_server import (
    attachment_tools,
    base_tools,
    browse_tools,
    cache_tools,
    canvas_tools,
    edit_tools,
    graph_tools,
    history_tools,
    periodic_tools,
    record_tools,
    search_tools,
    semantic_tools,
    system_tools,
    task_edit_tools,
    task_tools,
    workflow_tools,
    write_tools,
)
from weaver.mcp_server.access import (
    Grant,
    argument_refusal,
    current_grant,
    filter_answer,
    tool_refusal,
    touching_refusal,
)
from weaver.mcp_server.catalog import ToolDef, ToolSpec, bind, bind_tools, defs_of
from weaver.mcp_server.completions import install_completions
from weaver.mcp_server.envelope import (
    EnvelopeTool,
    envelope_result,
    fail,
    text_for_window,
    unwrap,
)
from weaver.mcp_server.prompts import PROMPT_STATE, install_prompts
from weaver.mcp_server.resources import install_resources
from weaver.mcp_server.tool_help import ToolHelp
from weaver.mcp_server.vaults import (
    EVERY_VAULT,
    VAULT_ARGUMENT,
    UnknownVaultError,
    VaultRouting,
    vaults_lifespan,
)
from weaver.runtime.lifespan import make_lifespan
from weaver.runtime.oauth_server import OwnerAuthorizationServer, auth_settings
from weaver.runtime.state import ServerState

# The modules whose tools a server offers, in the order tools/list names them (a read-only
# server leaves the writing ones out: `ToolSpec.offered`).
TOOL_MODULES = (
    cache_tools,
    system_tools,
    search_tools,
    semantic_tools,
    browse_tools,
    graph_tools,
    task_tools,
    canvas_tools,
    base_tools,
    workflow_tools,
    record_tools,
    write_tools,
    edit_tools,
    periodic_tools,
    attachment_tools,
    history_tools,
    task_edit_tools,
)

INSTRUCTIONS = """Weaver serves a shadow cache of the user's Obsidian-style markdown vault:
every note's frontmatter, tags and links, kept in step with the files as they change.
{toolsets}

Paths are relative to the vault root ('folder/Note.md'); a wrong one is answered "File not
found" (or "Folder not found") with what it probably meant. All timestamps are Unix epoch
milliseconds. Every result is {{success, data | error, metadata}}. A tool's whole help, with
examples and every field of its result, is the resource weaver://help/<tool name>."""

# What each toolset's tools are for, in the instructions of a server that serves it.
TOOLSET_INSTRUCTIONS: dict[Toolset, str] = {
    "notes": """Start with get_stats for an overview (list_folders and list_problems survey
        the vault); find notes with query_files (folder, type, status, tag, frontmatter); read
        one with get_file (metadata and links) or get_file_content (its text), several with
        get_files_content; get_daily_note finds the daily note of a date.""",
    "search": """search_notes searches the text; get_similar_notes finds notes close in
        meaning to one.""",
    "graph": """Follow links with search_links, get_neighbors and find_path; get_hubs and
        get_graph show the vault's structure.""",
    "tags": """list_tags, search_tags and search_by_tags find notes by tag; add_tags,
        remove_tags and rename_tag change tags.""",
    "tasks": """query_tasks finds checkbox tasks by status, dates, priority, tag or place (or a
        query in the Tasks plugin's language); run_tasks_block answers a note's ```tasks
        block as the plugin shows it. When writes are enabled, update_task completes, cancels,
        reopens or toggles a task line, or sets its dates or priority, as the Tasks plugin does
        (a recurring task gets its next occurrence).""",
    "canvas": """get_canvas reads an Obsidian canvas (.canvas): its cards (text, note, link,
        group) and edges, a page at a time. When writes are enabled, edit_canvas adds, moves
        or removes a card, or connects two (pass get_canvas's contentHash as expectedHash).""",
    "bases": """Obsidian Bases: list_bases finds the .base files and ```base blocks;
        query_base answers one view (rows, columns, groups, summaries) as the app shows it;
        query_notes asks a property question in the same language (a filter, formulas, a
        sort) without a file.""",
    "periodic": """get_periodic_note finds the day, week, month, quarter or year note of a date
        by the vault's Periodic Notes settings; when writes are enabled,
        append_to_periodic_note appends to it, creating it from its template.""",
    "attachments": """list_attachments finds the vault's images, PDFs and other files (by
        kind, folder, or unused: linked from no note); get_attachment shows an image, reads a
        PDF page's text, or says what a file is.""",
    "edit": """When writes are enabled, create_file, update_file (pass the contentHash from
        get_file as expectedHash), move_file (rewrites links) and delete_file (to .trash)
        change the vault; edit_file (append, prepend, a section by heading path or a block by
        ^id), replace_in_file, update_frontmatter and append_to_daily_note change part of a
        note; list_edits and restore_edit undo Weaver's own edits.""",
    "workflows": """Workflows: list_workflows, trigger_workflow, get_workflow_status,
        get_workflow_history.""",
    "records": """get_workflow_records reads what the built-in workflows stored (change log,
        note analyses, concept timelines, completed tasks, reviews, digests).""",
    "system": "health_check says whether Weaver is working.",
}

UNSERVED_INSTRUCTIONS = """Not served here (the user can add them with `weaver serve
--toolsets` or `toolsets` in the config): the {toolsets} tools."""

READER_INSTRUCTIONS = """This server is a reader (weaver serve --no-vault): it answers every
read from the shared cache, which the writer (weaver daemon, on the machine that holds the
notes' files) keeps fresh. The tools that change the vault{or_run} ({tools}) are not
offered here: call them on the writer.{queues} get_file_content and get_files_content need
the note's text, which a reader never reads from the files: unless the cache keeps it, they
answer an error naming the writer."""

READER_QUEUES = """ trigger_workflow works here: it queues the run for the workers (weaver
worker) of the shared PostgreSQL cache; follow it with get_workflow_status on any server."""

VAULTS_INSTRUCTIONS = """This server serves several vaults: {vaults}. Every tool takes
`vault`, the vault to answer from ({default} when left out); search_notes with vault "*"
searches them all, each hit naming its vault. A vault's resources are its weaver:// URIs under
weaver://vaults/<vault>/ (weaver://vaults/{other}/note/<path>)."""

READ_ONLY_INSTRUCTIONS = """read_only is set for this server: the tools that change the
vault or run workflows ({tools}) are not offered."""


ROOT_RESOURCE_METADATA = "/.well-known/oauth-protected-resource"


class StaticTokenVerifier:
    """Accepts exactly one bearer token (`http_token`), compared in constant time."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token=token, client_id="weaver-http-token", scopes=[])
        return None


class WeaverServer(MCPServer[ServerState]):
    """The SDK's server, answering a call of a tool it does not have as every other failure:
    an envelope, with the tools the client probably meant (the SDK's own answer is a bare
    "Unknown tool: x" text, which a model cannot correct from); a write tool this server leaves
    out (a reader, or read_only) or whose toolset it does not serve is answered with why, and how
    to have it.

    Tools are bound once per server, but callers differ (`access`): tools/list leaves out what
    the caller may not use, a call of one is refused with why, a path argument outside its
    folders is refused before the tool runs, and an answer loses the rows it may not read."""

    # A tool left out -> why, for the error answering a call of it (`build_server` sets it).
    withheld: Mapping[str, str] = MappingProxyType({})
    # The tools' specs, by name, and the settings holding the access rules (`build_server`).
    specs: Mapping[str, ToolSpec] = MappingProxyType({})
    access_settings: Settings | None = None
    access_state: ServerState | None = None
    # Several vaults: which one a call is for, and each one's tools (None: one vault).
    routing: VaultRouting | None = None
    # search_notes over every vault (`vault: "*"`; `search_tools.search_every_vault`).
    spanning_search: EnvelopeTool | None = None

    def caller_grant(self) -> Grant | None:
        return None if self.access_settings is None else current_grant(self.access_settings)

    def refusal(self, name: str, grant: Grant | None) -> str | None:
        spec = self.specs.get(name)
        if grant is None or spec is None:
            return None
        return tool_refusal(name, spec.required_scope, grant)

    async def list_tools(self) -> list[MCPTool]:
        grant = self.caller_grant()
        return [t for t in await super().list_tools() if self.refusal(t.name, grant) is None]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[ServerState, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        started = time.perf_counter()
        if name in self.withheld:
            return fail(self.withheld[name], started, False)
        grant = self.caller_grant()
        if self._tool_manager.get_tool(name) is None:
            known = [
                t.name for t in self._tool_manager.list_tools() if not self.refusal(t.name, grant)
            ]
            close = suggest(name, known)
            hint = f" ({did_you_mean(close)})" if close else f" (the tools: {', '.join(known)})"
            return fail(f"Unknown tool: {name!r}{hint}", started, False)
        vault = None
        if self.routing is not None:
            arguments = dict(arguments)
            try:
                vault = self.routing.route(name, arguments)
            except UnknownVaultError as exc:
                return fail(str(exc), started, False)
        spec = self.specs.get(name)
        refusal = self.refusal(name, grant)
        if refusal is None and grant is not None and spec is not None:
            refusal = argument_refusal(grant, spec.writes, arguments)
            if refusal is None and spec.writes and grant.write is not None:
                refusal = await self.touching_refusal(grant, name, arguments, vault)
        if refusal is not None:
            return fail(refusal, started, False)
        result = await self.call_in_vault(name, arguments, context, vault)
        if grant is None or grant.read is None or not isinstance(result, CallToolResult):
            return result
        return self.readable_answer(name, grant, result, context)

    async def list_prompts(self) -> list[MCPPrompt]:
        """Several vaults: each prompt takes `vault`, as every tool does."""
        prompts = await super().list_prompts()
        if self.routing is None:
            return prompts
        vault = MCPPromptArgument(
            name=VAULT_ARGUMENT,
            description=f"the vault to ask of: {', '.join(self.routing.names)} "
            f"(left out: {self.routing.default})",
            required=False,
        )
        return [p.model_copy(update={"arguments": [*(p.arguments or []), vault]}) for p in prompts]

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[ServerState, Any] | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        """The prompt built from the vault its `vault` argument names (the default's without)."""
        if self.routing is None:
            return await super().get_prompt(name, arguments, context)
        arguments = dict(arguments or {})
        try:
            vault = self.routing.route(name, arguments)
        except UnknownVaultError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from exc
        token = PROMPT_STATE.set(self.routing.states[vault])
        try:
            return await super().get_prompt(name, arguments, context)
        finally:
            PROMPT_STATE.reset(token)

    async def call_in_vault(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[ServerState, Any] | None,
        vault: str | None,
    ) -> CallToolResult | InputRequiredResult:
        """The call, run by the named vault's own tool (the default's: the SDK's)."""
        routing = self.routing
        if routing is None or vault is None or vault == routing.default:
            return await super().call_tool(name, arguments, context)
        if context is None:
            context = Context(mcp_server=self, subscriptions=self._subscriptions)
        tool = self.spanning_search if vault == EVERY_VAULT else routing.tools[vault][name]
        assert tool is not None  # built whenever there is routing
        result: CallToolResult | InputRequiredResult = await tool.run(
            arguments, context, convert_result=True
        )
        return result

    async def touching_refusal(
        self, grant: Grant, name: str, arguments: dict[str, Any], vault: str | None = None
    ) -> str | None:
        """`access.touching_refusal` on the cache, once it is ready (a dry run in a thread)."""
        if self.access_state is None:
            return None
        state = self.access_state
        if self.routing is not None and vault is not None and vault in self.routing.states:
            state = self.routing.states[vault]
        await state.wait_ready()
        check = functools.partial(touching_refusal, state.app, grant, name, arguments)
        return await anyio.to_thread.run_sync(check)

    def readable_answer(
        self,
        name: str,
        grant: Grant,
        result: CallToolResult,
        context: Context[ServerState, Any] | None,
    ) -> CallToolResult:
        """`result` without the rows naming notes `grant` may not read."""
        envelope = result.structured_content
        if not isinstance(envelope, dict):
            return result
        readable = filter_answer(grant, envelope)
        if readable == envelope:
            return result
        protocol = context.protocol_version if context is not None else None
        return text_for_window(envelope_result(readable), name, protocol)


def withheld_tools(state: ServerState) -> dict[str, str]:
    """The tools this server leaves out, each with why: a toolset it does not serve, or a
    write tool on a server without writes."""
    return {
        found.spec.name: withheld_reason(state, found.spec)
        for found in defs_of(*TOOL_MODULES)
        if not found.spec.offered(state)
    }


def withheld_reason(state: ServerState, spec: ToolSpec) -> str:
    name, served = spec.name, state.app.settings.toolsets
    if spec.toolset not in served:
        wanted = ",".join(t for t in TOOLSETS if t in served or t == spec.toolset)
        return (
            f"{name} is in the toolset {spec.toolset!r}, which this server does not serve (it "
            f"serves {', '.join(served)}): start it with --toolsets {wanted} (or all), or add "
            f"{spec.toolset!r} to `toolsets` in its config"
        )
    if not state.app.vault.has_files:
        what = "the vault" if state.app.queue_db is not None else "the vault or run workflows"
        return (
            f"{name} is not offered by this server: it is a reader (weaver serve --no-vault), "
            f"answering reads from the shared cache; tools that change {what} are the "
            "writer's: call it on the weaver daemon (or weaver serve) that holds the vault's files"
        )
    return f"{name} is not offered by this server: read_only is set in its settings"


def server_instructions(state: ServerState, routing: VaultRouting | None = None) -> str:
    served = state.app.settings.toolsets
    parts = [unwrap(TOOLSET_INSTRUCTIONS[toolset]) for toolset in served]
    unserved = [toolset for toolset in TOOLSETS if toolset not in served]
    if unserved:
        parts.append(unwrap(UNSERVED_INSTRUCTIONS.format(toolsets=", ".join(unserved))))
    text = unwrap(INSTRUCTIONS.format(toolsets=" ".join(parts)))
    if routing is not None:
        other = next(name for name in routing.names if name != routing.default)
        names = ", ".join(routing.names)
        said = VAULTS_INSTRUCTIONS.format(vaults=names, default=routing.default, other=other)
        text += "\n\n" + unwrap(said)
    # The write tools left out of the toolsets served: their absence needs explaining.
    tools = ", ".join(
        found.spec.name
        for found in defs_of(*TOOL_MODULES)
        if found.spec.toolset in served and not found.spec.offered(state)
    )
    if not tools:
        return text
    if state.app.vault.has_files:
        extra = READ_ONLY_INSTRUCTIONS.format(tools=tools)
    elif state.app.queue_db is not None:
        extra = READER_INSTRUCTIONS.format(or_run="", tools=tools, queues=READER_QUEUES)
    else:
        extra = READER_INSTRUCTIONS.format(or_run=" or run workflows", tools=tools, queues="")
    return text + "\n\n" + unwrap(extra)


def install_root_resource_metadata(server: MCPServer[ServerState], auth: AuthSettings) -> None:
    """Protected Resource Metadata at the root well-known address too: the SDK serves it at the
    address suffixed with `/mcp` (RFC 9728), and clients of the 2025-03-26 era look here."""
    assert auth.resource_server_url is not None  # auth_settings always sets it
    metadata = ProtectedResourceMetadata(
        resource=auth.resource_server_url,
        authorization_servers=[auth.issuer_url],
        resource_name="Weaver",
    )
    handler = ProtectedResourceMetadataHandler(metadata)
    server.custom_route(ROOT_RESOURCE_METADATA, methods=["GET"], include_in_schema=False)(
        handler.handle
    )


def vault_routing(
    default: str,
    vaults: Mapping[str, ServerState],
    found: list[ToolDef],
    bound: dict[str, EnvelopeTool],
) -> VaultRouting:
    """Every vault's tools, the default's being the ones the server registers, each listing
    `vault`; one rate limiter for all (a client's limits count its calls in every vault)."""
    limiter = vaults[default].rate_limits()
    for state in vaults.values():
        state.rate_limiter = limiter
    tools = {
        name: bound if name == default else bind_tools(state, found)
        for name, state in vaults.items()
    }
    routing = VaultRouting(default, dict(vaults), tools)
    for each in tools.values():
        for tool in each.values():
            routing.add_parameter(tool)
    return routing


def bind_spanning_search(state: ServerState, routing: VaultRouting) -> EnvelopeTool:
    """search_notes over every vault's cache, run like any tool (its arguments checked, its
    rate limit and deadline those of the default vault's search)."""
    spec = next(each.spec for each in defs_of(search_tools) if each.spec.name == "search_notes")
    spanning = ToolDef(spec, search_tools.search_every_vault)
    return bind(spanning, state, routing.states)


def build_server(
    state: ServerState,
    sessions: bool = True,
    vaults: Mapping[str, ServerState] | None = None,
) -> MCPServer[ServerState]:
    """The MCP server for one vault, with the tools of the toolsets its settings name. With
    `http_token` set, its HTTP app requires that token; with `oauth` too, it is also its own
    OAuth authorization server (`runtime.oauth_server`), and takes the tokens it issues.
    `sessions` false: served over stateless HTTP (see `resources.install_resources`).
    `vaults`: several vaults by name (`state` is the default one's, among them), each tool
    taking `vault` (`mcp_server.vaults`)."""
    settings = state.app.settings
    token = settings.http_token
    provider = OwnerAuthorizationServer(state.app.db, settings) if settings.oauth else None
    verifier = StaticTokenVerifier(token) if token and provider is None else None
    # The SDK wants an issuer for bearer auth; with no authorization server and no
    # resource_server_url it is never published or checked, so a placeholder is enough.
    auth = AuthSettings(issuer_url="http://localhost", resource_server_url=None) if token else None
    if provider is not None:
        auth = auth_settings(settings)
    found = defs_of(*TOOL_MODULES)
    withheld = withheld_tools(state)
    served = [each for each in found if each.spec.name not in withheld]
    bound = bind_tools(state, served)
    name = settings.vault_name
    routing = vault_routing(name, vaults, served, bound) if vaults and len(vaults) > 1 else None
    server = WeaverServer(
        name="weaver",
        title="Weaver",
        version=weaver.__version__,
        instructions=server_instructions(state, routing),
        tools=[bound[each.spec.name] for each in found if each.spec.name not in withheld],
        lifespan=make_lifespan(state) if routing is None else vaults_lifespan(vaults or {}, name),
        token_verifier=verifier,
        auth_server_provider=provider,
        auth=auth,
        log_level="WARNING",
    )
    if provider is not None:
        install_root_resource_metadata(server, auth_settings(settings))
    server.withheld = withheld
    server.specs = MappingProxyType({each.spec.name: each.spec for each in found})
    server.access_settings = settings
    server.access_state = state
    if routing is not None:
        server.routing = routing
        server.spanning_search = bind_spanning_search(state, routing)
    by_name = {each.spec.name: each for each in found}

    @functools.cache
    def bind_withheld(name: str) -> EnvelopeTool:
        return bind_tools(state, [by_name[name]])[name]

    specs = {name: each.spec for name, each in by_name.items()}
    vault_help = None if routing is None else routing.help
    helps = ToolHelp(specs, bound, withheld, bind_withheld, vault_help)
    subscriptions = install_resources(server, state, sessions, helps, routing)
    install_completions(server, state, subscriptions, sessions, helps, routing)
    install_prompts(server, state)
    return server
