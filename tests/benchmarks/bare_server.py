"""A bare MCP server on the same SDK, answering one recorded answer of Weaver's: the floor under
a big answer through a client over stdio (the SDK serialising the result, the pipe, the client
parsing and checking it), with no work at all in the tool. `clients` runs the TypeScript client
against it beside `weaver serve`.

    python -m tests.benchmarks.bare_server ANSWER_JSON

ANSWER_JSON: {"tool": name, "outputSchema": {...}, "structuredContent": {...}, "text": "..."},
as `clients` records it from a real call. The tool takes any arguments and answers exactly that.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent


def build(answer: dict[str, Any]) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("weaver-bench-floor")
    result = CallToolResult(
        content=[TextContent(type="text", text=answer["text"])],
        structured_content=answer["structuredContent"],
    )

    def recorded(limit: int = 0) -> CallToolResult:
        return result

    server.add_tool(recorded, name=answer["tool"], structured_output=False)
    tool = server._tool_manager.get_tool(answer["tool"])
    assert tool is not None
    tool.fn_metadata.output_schema = answer["outputSchema"]  # listed, so the client checks it
    return server


def main(argv: list[str]) -> None:
    build(json.loads(Path(argv[0]).read_text(encoding="utf-8"))).run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
