"""A bare MCP server on the same SDK, answering recorded answers of Weaver's: the floor under
those answers (the SDK serialising each result, the transport, the client parsing and checking
it), with no work at all in the tools. `clients` runs the TypeScript client against it over
stdio beside `weaver serve`; `concurrency` runs its 50 sessions against it over HTTP.

    python -m tests.benchmarks.bare_server ANSWERS_JSON [PORT]

ANSWERS_JSON: one answer or a list of them, each {"tool": name, "outputSchema": {...},
"structuredContent": {...}, "text": "..."}, as recorded from a real call. Each tool takes any
arguments and answers exactly its recording. With PORT, over Streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent


def build(answers: list[dict[str, Any]]) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("weaver-bench-floor")
    for answer in answers:
        _add(server, answer)
    return server


def _add(server: MCPServer[Any], answer: dict[str, Any]) -> None:
    result = CallToolResult(
        content=[TextContent(type="text", text=answer["text"])],
        structured_content=answer["structuredContent"],
    )

    def recorded(query: str = "", limit: int = 0) -> CallToolResult:
        return result

    server.add_tool(recorded, name=answer["tool"], structured_output=False)
    tool = server._tool_manager.get_tool(answer["tool"])
    assert tool is not None
    tool.fn_metadata.output_schema = answer["outputSchema"]  # listed, so the client checks it


def main(argv: list[str]) -> None:
    answers = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    server = build(answers if isinstance(answers, list) else [answers])
    if len(argv) < 2:
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=int(argv[1]), log_level="error")


if __name__ == "__main__":
    main(sys.argv[1:])
