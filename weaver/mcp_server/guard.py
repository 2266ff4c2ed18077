"""Checks in front of the MCP endpoint that the SDK makes too loosely.

- **Host and Origin, exactly.** The SDK's `name:*` patterns match by prefix, so
  `Host: 127.0.0.1:8765.evil.example` passed (a DNS-rebinding name built to look like ours).
  Here a loopback server accepts a Host that is one of its names, with or without a port made
  of digits, and an Origin that is `http://` plus such a Host; anything else is 421 / 403.
- **JSON-RPC ids.** A request whose `id` is neither a string, a number nor null is invalid
  (JSON-RPC 2.0, section 4); the SDK took it for a notification and answered 202 with no
  reply. Here it gets a JSON-RPC "Invalid Request" error (HTTP 400) naming the id.
- **Nesting.** A body nested deeper than `MAX_JSON_DEPTH` (200,000 levels raised
  `RecursionError` in the parser, a 500) gets a JSON-RPC "Parse error" (HTTP 400) before
  anything parses it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from weaver.json_nesting import JSONTooDeepError, too_deep

# Bodies bigger than this are not looked into (the SDK applies its own limits to them).
MAX_INSPECTED_BODY = 4 * 1024 * 1024
PARSE_ERROR = -32700  # JSON-RPC 2.0's codes
INVALID_REQUEST = -32600


class RequestGuard:
    """ASGI middleware: strict Host/Origin for a loopback server, bodies nested within
    bounds, valid JSON-RPC ids."""

    def __init__(self, app: ASGIApp, names: Iterable[str] | None, path: str) -> None:
        self.app = app
        self.path = path
        self.host = None
        self.origin = None
        if names is not None:
            alternatives = "|".join(re.escape(name) for name in sorted(names))
            self.host = re.compile(rf"(?:{alternatives})(?::\d{{1,5}})?", re.IGNORECASE)
            self.origin = re.compile(rf"http://(?:{alternatives})(?::\d{{1,5}})?", re.IGNORECASE)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.path):
            await self.app(scope, receive, send)
            return
        headers = {
            key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]
        }
        if self.host is not None and not self.host.fullmatch(headers.get("host", "")):
            await _plain(send, 421, "Invalid Host header")
            return
        origin = headers.get("origin")
        if self.origin is not None and origin is not None and not self.origin.fullmatch(origin):
            await _plain(send, 403, "Invalid Origin header")
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, replay = await _read_body(receive)
        if too_deep(body):
            await _json_rpc_error(send, f"Parse error: {JSONTooDeepError()}", PARSE_ERROR)
            return
        problem = _invalid_id(body)
        if problem is not None:
            await _json_rpc_error(send, problem, INVALID_REQUEST)
            return
        await self.app(scope, replay, send)


async def _read_body(receive: Receive) -> tuple[bytes, Receive]:
    """The request's body, and a `receive` that hands the same messages to the app."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if not message.get("more_body") or size > MAX_INSPECTED_BODY:
            break
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return (body if size <= MAX_INSPECTED_BODY else b""), replay


def _invalid_id(body: bytes) -> str | None:
    if not body:
        return None
    try:
        payload: Any = json.loads(body)
    except ValueError:
        return None  # the SDK answers a parse error itself
    for item in payload if isinstance(payload, list) else [payload]:
        if isinstance(item, dict) and "id" in item:
            value = item["id"]
            if isinstance(value, bool) or not isinstance(value, (str, int, float, type(None))):
                return f"Invalid Request: id must be a string, a number or null, not {value!r}"[
                    :200
                ]
    return None


async def _plain(send: Send, status: int, text: str) -> None:
    await _respond(send, status, text.encode(), b"text/plain; charset=utf-8")


async def _json_rpc_error(send: Send, message: str, code: int) -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    await _respond(send, 400, json.dumps(error).encode(), b"application/json")


async def _respond(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
