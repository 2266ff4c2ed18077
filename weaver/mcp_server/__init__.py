"""Weaver's MCP server: the shadow-cache tools and health_check, over stdio or Streamable HTTP.

server.py        build_server(state): the tools on an MCPServer, plus the lifespan
state.py         ServerState: the App, the watcher, readiness, counters
lifecycle.py     the lifespan: writer lock, initial reconcile, watcher
envelope.py      {success, data | error, metadata} results, argument errors, clamping
schemas.py       the result models (each tool's outputSchema)
cache_tools.py   query_files, get_file, get_file_content, search_tags, search_links, get_stats
system_tools.py  health_check (and the report behind GET /health)
serve.py         `weaver serve`: stdio, or HTTP at /mcp with /health and bearer auth
"""

from __future__ import annotations

from weaver.mcp_server.server import build_server
from weaver.mcp_server.state import ServerState

__all__ = ["ServerState", "build_server"]
