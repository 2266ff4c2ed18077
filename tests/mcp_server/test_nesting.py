"""A body nested too deep for a parser, over real HTTP: refused with 400 and a JSON-RPC parse
error before anything parses it (200,000 levels were a 500), while a body within the limit
still reaches the SDK."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import write_files
from tests.mcp_server.served_http import HEADERS, served
from weaver.json_nesting import MAX_JSON_DEPTH

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def nested(levels: int) -> bytes:
    """A tools/call whose arguments hold a value nested `levels` deep in all."""
    inner = b"[" * (levels - 3) + b"]" * (levels - 3)
    return b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_stats",' + (
        b'"arguments":{"x":' + inner + b"}}}"
    )


async def test_a_body_nested_too_deep_is_a_parse_error(tmp_path: Path) -> None:
    vault = write_files(tmp_path / "vault", {"a.md": "# A\n"})
    async with served(vault) as server:
        for levels in (200_000, MAX_JSON_DEPTH + 1):  # a 500, then the SDK's own error, before
            reply = await server.http.post(server.url, content=nested(levels), headers=HEADERS)
            assert reply.status_code == 400
            assert reply.json() == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": "Parse error: nested deeper than 512 levels"},
            }
        # Within the limit the request goes on to the SDK (which wants a session first).
        within = await server.http.post(server.url, content=nested(MAX_JSON_DEPTH), headers=HEADERS)
        assert within.status_code != 500 and "nested deeper" not in within.text
