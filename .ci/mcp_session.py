"""One MCP stdio session against an installed `weaver serve`: the check a client makes first.

    python mcp_session.py /path/to/venv/bin/weaver /path/to/vault

Lists the tools (the default toolsets, then all of them) and calls get_stats; exits non-zero,
saying why, if either goes wrong. Run by
`.ci/install-check` with the interpreter of the venv the wheel was installed into.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client, StdioServerParameters

# The default toolsets (notes, search, edit) hold these; `--toolsets all` adds the others.
DEFAULT_TOOLS = {"query_files", "get_file", "search_notes", "get_stats", "edit_file"}
OTHER_TOOLS = {"trigger_workflow", "get_graph", "list_tags"}


async def listed(weaver: str, vault: str, *flags: str) -> set[str]:
    server = StdioServerParameters(command=weaver, args=["--vault", vault, "serve", *flags])
    async with Client(server, mode="legacy") as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def check(weaver: str, vault: str) -> None:
    every = await listed(weaver, vault, "--toolsets", "all")
    if missing := (DEFAULT_TOOLS | OTHER_TOOLS) - every:
        raise SystemExit(f"--toolsets all lacks {sorted(missing)}; it lists {sorted(every)}")
    server = StdioServerParameters(command=weaver, args=["--vault", vault, "serve"])
    async with Client(server, mode="legacy") as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        if DEFAULT_TOOLS - tools or tools & OTHER_TOOLS:
            raise SystemExit(f"the default tools/list is wrong: it lists {sorted(tools)}")
        result = await client.call_tool("get_stats", {})
        body = json.loads(result.content[0].text)  # type: ignore[union-attr]
        if result.is_error or not body["success"] or body["data"]["totalFiles"] < 20:
            raise SystemExit(f"get_stats failed: {body}")
        notes = body["data"]["totalFiles"]
        shown = f"{len(tools)} tools by default, {len(every)} with --toolsets all"
        print(f"MCP over stdio: {shown}, get_stats counts {notes} notes")


if __name__ == "__main__":
    anyio.run(check, sys.argv[1], sys.argv[2])
