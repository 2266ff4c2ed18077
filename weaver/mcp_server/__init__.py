"""Weaver's MCP server: the shadow-cache tools and health_check, over stdio or Streamable HTTP.

server.py        build_server(state): the tools on an MCPServer, plus the lifespan
                 (`runtime.lifespan`) over a `runtime.state.ServerState`
envelope.py      {success, data | error, metadata} results, argument errors, clamping
catalog.py       @tool and ToolSpec: tools as module-level functions, bound to a server's state
confirmation.py  destructive calls asked of the person first (elicitation), else the setting
questions.py     the dry runs worded as those questions (delete, move, tag edits)
hints.py         "did you mean": the note a path that names none probably meant
schemas.py       the result models (each tool's outputSchema); graph_schemas.py, the graph's
cache_tools.py   query_files, get_file, get_file_content, search_tags, search_links, get_stats
search_tools.py  search_notes (full text; semantic and hybrid modes through semantic_tools)
semantic_tools.py  get_similar_notes, the semantic modes and resolve_names strategy
browse_tools.py  list_tags, list_folders, list_problems (errors, broken links, orphans)
content.py       a note's text in pages or sections; backlink lines
sizing.py        how many tokens an answer is (conservatively), and a page that fits
graph_tools.py   get_neighbors, find_path, get_hubs, get_graph and the lookups (search_by_tags,
                 random_file, files_exist, resolve_names)
write_tools.py   create_file, update_file, move_file, delete_file (left out when read_only)
edit_tools.py    edit_file and the other edits inside notes, tag edits, daily notes,
                 get_files_content
periodic_tools.py  get_periodic_note, append_to_periodic_note (day .. year notes)
attachment_tools.py  get_attachment, list_attachments (images, PDF pages, other files)
history_tools.py list_edits, restore_edit
workflow_tools.py  trigger_workflow, list_workflows, get_workflow_status, get_workflow_history
record_tools.py  get_workflow_records
system_tools.py  health_check (the report of `runtime.health_report`)
access.py        scopes and folder grants: tools a caller sees, paths it may name, rows it reads
guard.py         Host and Origin checks on HTTP (`host.serve` mounts the app)
"""

from __future__ import annotations

from weaver.mcp_server.server import build_server

__all__ = ["build_server"]
