"""A TCP relay between ``autoscaler run`` and the API emulator that misbehaves on demand.

Faults act on real connections, as a load balancer, a dying API server or a broken network would:

- :meth:`TcpRelay.cut` aborts connections (an RST, mid-body for a watch), optionally only those whose
  current HTTP request matches (``"watch=true"``): what an API-server restart or an idle timeout does;
- :meth:`TcpRelay.freeze` keeps connections open but forwards nothing (a half-dead peer, a paused VM);
  :meth:`TcpRelay.thaw` lets the held bytes through again;
- :meth:`TcpRelay.slow` delays every chunk in both directions;
- :meth:`TcpRelay.refuse` closes the listening socket (connection refused) until :meth:`accept`;
- :meth:`TcpRelay.reset_new` answers every new connection with an RST;
- :meth:`TcpRelay.reset_requests` resets each connection that carries a matching request, before the
  request reaches the server (every scale write reset, for as long as the test wants).

Every request line forwarded is kept with its moment in :attr:`TcpRelay.sent`, so a test can tell what
one instance sent and when (:meth:`TcpRelay.requests`).

The relay reads the first line of each HTTP/1.1 request it forwards (client to server), so a fault can
pick the connection now carrying a watch, a Lease update or a scale patch. Nothing else is parsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field

_REQUEST_LINE = re.compile(rb"(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (\S+) HTTP/1\.[01]\r\n")

Match = Callable[[str], bool]  # on "METHOD /path?query" of the connection's current request


def requests_matching(pattern: str) -> Match:
    compiled = re.compile(pattern)
    return lambda request: bool(compiled.search(request))


@dataclass(eq=False)
class _Connection:
    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    request: str = ""  # the latest request line seen on this connection
    requests: list[str] = field(default_factory=list)
    frozen: bool = False
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def abort(self) -> None:
        for writer in (self.client, self.server):
            _reset(writer)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST (SO_LINGER 0), not a FIN: the peer sees 'connection reset' mid-stream."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport = writer.transport
    with contextlib.suppress(Exception):
        transport.abort()


class TcpRelay:
    """Listens on 127.0.0.1 (a free port) and relays every connection to ``upstream_port``."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.delay = 0.0
        self.connections: set[_Connection] = set()
        self.accepted = 0
        self.cuts = 0
        # Every request line forwarded, with the (monotonic) moment it was seen, closed connections
        # included: what this instance sent, and when (e.g. "no write after its lease ran out").
        self.sent: list[tuple[float, str]] = []
        self._reset_match: Match | None = None
        self._server: asyncio.Server | None = None
        self._freeze_match: Match | None = None
        self._reset_new = False
        self._thawed = asyncio.Event()
        self._thawed.set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> TcpRelay:
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        await self.refuse()
        for connection in list(self.connections):
            connection.abort()
        self.connections.clear()

    async def __aenter__(self) -> TcpRelay:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- faults ------------------------------------------------------------------------------------

    def cut(self, match: Match | None = None) -> int:
        """Abort the connections whose current request matches (all without ``match``); returns how many."""
        victims = [c for c in self.connections if match is None or match(c.request)]
        for connection in victims:
            connection.abort()
            self.connections.discard(connection)
        self.cuts += len(victims)
        return len(victims)

    def freeze(self, match: Match | None = None) -> None:
        """Stop forwarding on matching connections (all, and every new one, without ``match``)."""
        self._freeze_match = match or (lambda _request: True)
        self._thawed.clear()
        for connection in self.connections:
            if self._freeze_match(connection.request):
                connection.frozen = True

    def thaw(self) -> None:
        self._freeze_match = None
        for connection in self.connections:
            connection.frozen = False
        self._thawed.set()

    def slow(self, seconds: float) -> None:
        """Hold every chunk ``seconds`` before forwarding it (0 restores full speed)."""
        self.delay = seconds

    async def refuse(self) -> None:
        """Stop listening: new connections are refused; open ones go on."""
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def accept(self) -> None:
        """Listen again on the same port."""
        if self._server is None:
            self._server = await asyncio.start_server(self._accepted, "127.0.0.1", self.port)

    def reset_new(self, on: bool = True) -> None:
        """Answer every new connection with an RST before any byte is exchanged."""
        self._reset_new = on

    def reset_requests(self, match: Match | None) -> None:
        """Abort (RST) every connection as soon as it carries a request that matches, before the request
        reaches the server (``None`` stops): a network that resets, e.g., every scale write."""
        self._reset_match = match

    def requests(self, match: Match | None = None, since: float = 0.0) -> list[tuple[float, str]]:
        """(moment, request line) of every request sent since ``since`` that matches."""
        return [(at, line) for at, line in self.sent if at >= since and (match is None or match(line))]

    def matching(self, match: Match) -> list[str]:
        """The current requests of open connections that match (e.g. which watches are open)."""
        return [c.request for c in self.connections if match(c.request)]

    # -- relaying ----------------------------------------------------------------------------------

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self._reset_new:
            _reset(writer)
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            _reset(writer)
            return
        connection = _Connection(writer, upstream_writer)
        if self._freeze_match is not None and self._freeze_match(""):
            connection.frozen = True
        self.connections.add(connection)
        connection.tasks = [
            asyncio.create_task(self._pump(reader, upstream_writer, connection, from_client=True)),
            asyncio.create_task(self._pump(upstream_reader, writer, connection, from_client=False)),
        ]
        await asyncio.gather(*connection.tasks, return_exceptions=True)
        self.connections.discard(connection)

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: _Connection, *, from_client: bool
    ) -> None:
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                if from_client:
                    for found in _REQUEST_LINE.finditer(chunk):
                        connection.request = f"{found.group(1).decode()} {found.group(2).decode()}"
                        connection.requests.append(connection.request)
                        self.sent.append((time.monotonic(), connection.request))
                        if self._reset_match is not None and self._reset_match(connection.request):
                            connection.abort()
                            return
                        if self._freeze_match is not None and self._freeze_match(connection.request):
                            connection.frozen = True
                while connection.frozen:
                    await self._thawed.wait()
                    if connection.frozen and self._freeze_match is None:
                        connection.frozen = False
                if self.delay:
                    await asyncio.sleep(self.delay)
                writer.write(chunk)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
        except (OSError, asyncio.IncompleteReadError, RuntimeError):
            connection.abort()
        finally:
            if not from_client:
                with contextlib.suppress(Exception):
                    writer.close()
