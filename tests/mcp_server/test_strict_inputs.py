"""The smaller holes of the load-and-fault run: strict argument types, list properties in
frontmatter, a NUL in a search, exact Host/Origin checks, JSON-RPC ids that are objects."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Tools, serve
from weaver.config import Settings
from weaver.mcp_server.guard import RequestGuard

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def tools(tmp_path: Path) -> AsyncIterator[Tools]:
    root = write_files(tmp_path / "vault", {"a.md": "# A\nsome words here\n"})
    served = serve(Settings(vault=root))
    try:
        async with Client(served.server, mode="legacy") as client:
            yield Tools(client)
    finally:
        served.app.close()


@pytest.mark.parametrize("value", [True, False])
async def test_a_boolean_is_not_a_limit(tools: Tools, value: bool) -> None:
    message = await tools.error("query_files", limit=value)
    assert message == "Invalid arguments: limit: a boolean is not a number"
    assert "boolean" in await tools.error("search_notes", query="words", offset=value)


@pytest.mark.parametrize(
    "frontmatter",
    [{"tags": 5}, {"Tags": {"a": 1}}, {"aliases": [1, 2]}, {"cssclasses": True}],
)
async def test_list_properties_take_strings_only(tools: Tools, frontmatter: Any) -> None:
    message = await tools.error("create_file", path="b.md", content="x", frontmatter=frontmatter)
    assert message.startswith("Invalid arguments: frontmatter:")
    assert "list of strings" in message
    assert "already exists" not in await tools.error(
        "update_file", path="a.md", frontmatter=frontmatter
    )


async def test_list_properties_as_a_string_or_a_list_pass(tools: Tools) -> None:
    await tools.ok("create_file", path="c.md", content="x", frontmatter={"tags": "one"})
    await tools.ok("update_file", path="c.md", frontmatter={"tags": ["one", "two"], "n": 5})


async def test_a_nul_in_a_search_word_is_no_database_error(tools: Tools) -> None:
    data = await tools.ok("search_notes", query="wor\x00ds")
    assert isinstance(data["results"], list)


async def ok_app(scope: Any, receive: Any, send: Any) -> None:
    body = json.dumps({"reached": True}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


async def post(headers: dict[str, str], body: Any = None) -> tuple[int, Any]:
    """POST to `/mcp` through the guard (in front of `ok_app`): the status and JSON body."""
    guard = RequestGuard(ok_app, names={"127.0.0.1", "localhost", "[::1]"}, path="/mcp")
    raw = json.dumps(body if body is not None else {}).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    sent: list[MutableMapping[str, Any]] = []
    messages = [{"type": "http.request", "body": raw, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await guard(scope, receive, send)
    reply = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    try:
        decoded: Any = json.loads(reply)
    except ValueError:
        decoded = reply.decode()
    return sent[0]["status"], decoded


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:8765", 200),
        ("localhost", 200),
        ("[::1]:8765", 200),
        ("127.0.0.1:8765.evil.example", 421),
        ("127.0.0.1.evil.example", 421),
        ("localhost:80@evil", 421),
        ("evil.example:8765", 421),
    ],
)
async def test_the_host_must_match_exactly(host: str, status: int) -> None:
    assert (await post({"host": host}))[0] == status


async def test_the_origin_must_match_exactly() -> None:
    headers = {"host": "127.0.0.1:1", "origin": "http://127.0.0.1:8765.evil.example"}
    assert (await post(headers))[0] == 403
    headers["origin"] = "http://localhost:8765"
    assert (await post(headers))[0] == 200


@pytest.mark.parametrize("bad_id", [{"a": 1}, [1], True])
async def test_a_request_id_that_is_an_object_gets_an_error_reply(bad_id: Any) -> None:
    body = {"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"}
    status, reply = await post({"host": "127.0.0.1:1"}, body)
    assert status == 400
    assert reply["error"]["code"] == -32600 and "id must be" in reply["error"]["message"]


@pytest.mark.parametrize("good_id", [1, "x", None])
async def test_valid_ids_reach_the_server(good_id: Any) -> None:
    body = {"jsonrpc": "2.0", "id": good_id, "method": "tools/list"}
    assert await post({"host": "127.0.0.1:1"}, body) == (200, {"reached": True})
