"""The HTTP socket answers without Nagle's delay: accepted connections have TCP_NODELAY (its
absence cost ~48 ms per call, whatever the tool: headers and body are two small writes, and
the second waited for the client's delayed ACK)."""

from __future__ import annotations

import asyncio
import socket

from weaver.runtime.http import bind_socket


def test_the_socket_is_tcp_with_nodelay() -> None:
    sock = bind_socket("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP  # asyncio sets NODELAY only on such sockets
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        sock.close()


def test_connections_asyncio_accepts_on_it_have_nodelay() -> None:
    async def scenario() -> int:
        sock = bind_socket("127.0.0.1", 0)
        seen: list[int] = []

        async def handle(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted = writer.get_extra_info("socket")
            seen.append(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=sock)
        async with server:
            port = sock.getsockname()[1]
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(100):
                if seen:
                    break
                await asyncio.sleep(0.01)
            writer.close()
        return seen[0]

    assert asyncio.run(scenario()) != 0
