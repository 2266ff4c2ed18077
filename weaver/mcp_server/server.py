"""`build_server`: Weaver's tools on an `MCPServer`, with a lifespan that keeps the cache fresh."""

from __future__ import annotations

import hmac
import time
from typing import Any

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, InputRequiredResult

import weaver
from weaver.errors import did_you_mean, suggest
from weaver.mcp_server.browse_tools import build_browse_tools
from weaver.mcp_server.cache_tools import build_cache_tools
from weaver.mcp_server.completions import install_completions
from weaver.mcp_server.edit_tools import build_edit_tools, build_read_edit_tools
from weaver.mcp_server.envelope import fail, unwrap
from weaver.mcp_server.graph_tools import build_graph_tools
from weaver.mcp_server.lifecycle import make_lifespan
from weaver.mcp_server.prompts import install_prompts
from weaver.mcp_server.record_tools import build_record_tools
from weaver.mcp_server.resources import install_resources
from weaver.mcp_server.search_tools import build_search_tools
from weaver.mcp_server.semantic_tools import build_semantic_tools
from weaver.mcp_server.state import ServerState
from weaver.mcp_server.system_tools import build_system_tools
from weaver.mcp_server.workflow_tools import build_workflow_tools
from weaver.mcp_server.write_tools import build_write_tools

INSTRUCTIONS = """Weaver serves a shadow cache of the user's Obsidian-style markdown vault:
every note's frontmatter, tags and links, kept in step with the files as they change.
Start with get_stats for an overview (list_tags, list_folders and list_problems survey the
vault); find notes with query_files (folder, type, status, tag),
search_tags or search_notes (full text); follow links with get_file, search_links,
get_neighbors and find_path; read a note's text with get_file_content. When writes are enabled,
create_file, update_file (pass the contentHash from get_file as expectedHash), move_file
(rewrites links) and delete_file (to .trash) change the vault; edit_file (append, prepend, a
section by heading path or a block by ^id), replace_in_file, update_frontmatter, add_tags,
remove_tags, rename_tag and append_to_daily_note change part of it. get_files_content reads
several notes at once; get_daily_note finds the daily note of a date. Workflows: list_workflows,
trigger_workflow, get_workflow_status, get_workflow_history; what the built-in workflows
stored (change log, note analyses, concept timelines, completed tasks, reviews, digests) with
get_workflow_records. Paths are relative to the vault
root ('folder/Note.md'); a wrong one is answered "File not found" (or "Folder not found")
with what it probably meant. All timestamps are Unix epoch milliseconds. Every result is
{success, data | error, metadata}."""


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
    "Unknown tool: x" text, which a model cannot correct from)."""

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[ServerState, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        if self._tool_manager.get_tool(name) is None:
            known = [tool.name for tool in self._tool_manager.list_tools()]
            close = suggest(name, known)
            hint = f" ({did_you_mean(close)})" if close else f" (the tools: {', '.join(known)})"
            return fail(f"Unknown tool: {name!r}{hint}", time.perf_counter(), False)
        return await super().call_tool(name, arguments, context)


def build_server(state: ServerState) -> MCPServer[ServerState]:
    """The MCP server for one vault. With `http_token` set, its HTTP app requires that token."""
    token = state.app.settings.http_token
    verifier = StaticTokenVerifier(token) if token else None
    # The SDK wants an issuer for bearer auth; with no authorization server and no
    # resource_server_url it is never published or checked, so a placeholder is enough.
    auth = AuthSettings(issuer_url="http://localhost", resource_server_url=None) if token else None
    server = WeaverServer(
        name="weaver",
        title="Weaver",
        version=weaver.__version__,
        instructions=unwrap(INSTRUCTIONS),
        tools=[
            *build_cache_tools(state),
            *build_system_tools(state),
            *build_search_tools(state),
            *build_semantic_tools(state),
            *build_browse_tools(state),
            *build_graph_tools(state),
            *build_workflow_tools(state),
            *build_record_tools(state),
            *build_write_tools(state),  # none when read_only
            *build_read_edit_tools(state),
            *build_edit_tools(state),  # none when read_only
        ],
        lifespan=make_lifespan(state),
        token_verifier=verifier,
        auth=auth,
        log_level="WARNING",
    )
    install_completions(server, state, install_resources(server, state))
    install_prompts(server, state)
    return server
