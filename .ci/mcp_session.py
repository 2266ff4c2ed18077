"""One MCP stdio session against an installed `weaver serve`: the check a client makes first.

    python mcp_session.py /path/to/venv/bin/weaver /path/to/vault

Lists the tools and calls get_stats; exits non-zero, saying why, if either goes wrong. Run by
`.ci/install-check` with the interpreter of the venv the wheel was installed into.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client, StdioServerParameters

EXPECTED_TOOLS = {"query_files", "get_file", "search_notes", "get_stats", "trigger_workflow"}


async def check(weaver: str, vault: str) -> None:
    server = StdioServerParameters(command=weaver, args=["--vault", vault, "serve"])
    async with Client(server, mode="legacy") as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        missing = EXPECTED_TOOLS - tools
        if missing:
            raise SystemExit(f"tools/list lacks {sorted(missing)}; it lists {sorted(tools)}")
        result = await client.call_tool("get_stats", {})
        body = json.loads(result.content[0].text)  # type: ignore[union-attr]
        if result.is_error or not body["success"] or body["data"]["totalFiles"] < 20:
            raise SystemExit(f"get_stats failed: {body}")
        notes = body["data"]["totalFiles"]
        print(f"MCP over stdio: {len(tools)} tools, get_stats counts {notes} notes")


if __name__ == "__main__":
    anyio.run(check, sys.argv[1], sys.argv[2])
