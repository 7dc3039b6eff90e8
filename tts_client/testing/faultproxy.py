"""``FaultProxy``: a TCP proxy that breaks the link between a client and a server on command.

For fault tests and the reliability benchmark: put it between a ``TTSSession`` (or the agent)
and a TTS server, then, mid-turn:

- ``drop()``: close both sides of every live connection (FIN);
- ``reset()``: abort both sides with a TCP RST (``SO_LINGER`` 0);
- ``half_close(toward)``: FIN toward one side only; the other direction keeps flowing;
- ``stall(seconds)``: forward nothing, either way, on any connection (new ones too) for a while;
- ``throttle(bytes_per_s)``: cap each direction of every connection, live and new;
- ``refuse(True)``: new connections are reset as soon as they are accepted.

``hold(after_bytes)`` places a fault exactly: live connections forward ``after_bytes`` more
bytes toward the client, then nothing toward it until ``release()`` or a fault.

``TcpProxy`` is the forwarding alone (listening, one ``_Pipe`` per connection, the flow
settings the faults change); ``FaultProxy`` adds the faults.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import Literal, Self

Side = Literal["client", "server"]
CHUNK = 64 * 1024
THROTTLE_TICK_S = 0.05  # a throttled direction sends this much of a second's budget at a time


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close ``writer``'s socket with an RST instead of a FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class _Pipe:
    """One proxied connection: two pumps, client → server (up) and server → client (down)."""

    def __init__(
        self,
        proxy: TcpProxy,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        server: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        self._proxy = proxy
        self.client, self.server = client[1], server[1]
        self.budget: int | None = None  # bytes toward the client before a hold starts
        self.downstream = asyncio.Event()  # cleared while held
        self.downstream.set()
        self.up = asyncio.create_task(self._pump(client[0], self.server, down=False))
        self.down = asyncio.create_task(self._pump(server[0], self.client, down=True))

    async def run(self) -> None:
        """Forward until both directions have ended, then close both sockets."""
        await asyncio.wait([self.up, self.down])
        for writer in (self.client, self.server):
            writer.close()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, down: bool
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(CHUNK):
                while data:
                    size = await self._allowance(len(data), down)
                    writer.write(data[:size])
                    await writer.drain()
                    data = data[size:]
                    if (rate := self._proxy.rate) is not None:
                        await asyncio.sleep(size / rate)
            if writer.can_write_eof() and not writer.is_closing():
                writer.write_eof()  # a half-close passes through as one

    async def _allowance(self, wanted: int, down: bool) -> int:
        """Wait until this direction may send, then how many bytes it may send now."""
        while True:
            await self._proxy.flowing.wait()
            if down:
                await self.downstream.wait()
                if self.budget == 0:
                    self.budget = None
                    self.downstream.clear()
                    continue
            break
        size = wanted
        if (rate := self._proxy.rate) is not None:
            size = min(size, max(1, int(rate * THROTTLE_TICK_S)))
        if down and self.budget is not None:
            size = min(size, self.budget)
            self.budget -= size
        return size

    def stop(self) -> None:
        """Stop forwarding both ways now."""
        self.up.cancel()
        self.down.cancel()


class TcpProxy:
    """Listen on ``host:port`` (0: a free port) and forward every connection to ``upstream``,
    as its flow settings allow: ``flowing`` (cleared: nothing moves), ``rate``, ``refusing``."""

    def __init__(
        self, upstream_host: str, upstream_port: int, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.connections = 0  # connections accepted so far (refused ones included)
        self.rate: float | None = None  # bytes per second per direction; None: unlimited
        self.flowing = asyncio.Event()  # cleared during a stall
        self.flowing.set()
        self._host, self._port = host, port
        self._refusing = False  # new connections are reset as soon as they are accepted
        self._pipes: set[_Pipe] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        """The port clients connect to."""
        if self._server is None:
            raise RuntimeError("the proxy is not started")
        return int(self._server.sockets[0].getsockname()[1])

    def url(self, scheme: str = "ws", path: str = "") -> str:
        """A URL through the proxy, e.g. ``url("ws", "/ws")``."""
        return f"{scheme}://{self._host}:{self.port}{path}"

    @property
    def live(self) -> int:
        """Connections open now."""
        return len(self._pipes)

    async def start(self) -> Self:
        """Start listening."""
        self._server = await asyncio.start_server(self._accept, self._host, self._port)
        return self

    async def aclose(self) -> None:
        """Stop listening and close every connection."""
        if self._server is not None:
            self._server.close()
        self.drop()  # every connection's task ends by itself
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    def drop(self) -> int:
        """Close both sides of every live connection; returns how many there were."""
        pipes, self._pipes = self._pipes, set()
        for pipe in pipes:
            pipe.stop()
            pipe.client.close()
            pipe.server.close()
        return len(pipes)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        if self._refusing:
            _abort(writer)
            return
        try:
            server = await asyncio.open_connection(*self.upstream)
        except OSError:
            _abort(writer)  # the upstream is down: so is the proxy, as the client sees it
            return
        pipe = _Pipe(self, (reader, writer), server)
        self._pipes.add(pipe)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await pipe.run()
        finally:
            self._pipes.discard(pipe)
            if task is not None:
                self._tasks.discard(task)


class FaultProxy(TcpProxy):
    """A ``TcpProxy`` that breaks its connections on command: ``drop`` (its own), ``reset``,
    ``half_close``, ``stall``, ``throttle``, ``refuse``, ``hold`` and ``release``."""

    def __init__(
        self, upstream_host: str, upstream_port: int, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(upstream_host, upstream_port, host=host, port=port)
        self._stall: asyncio.TimerHandle | None = None

    def reset(self) -> int:
        """Abort both sides of every live connection with an RST; returns how many."""
        pipes, self._pipes = self._pipes, set()
        for pipe in pipes:
            pipe.stop()
            _abort(pipe.client)
            _abort(pipe.server)
        return len(pipes)

    def half_close(self, toward: Side) -> int:
        """Send FIN toward one side of every live connection and forward nothing more to it."""
        for pipe in self._pipes:
            to_client = toward == "client"
            pump, writer = (pipe.down, pipe.client) if to_client else (pipe.up, pipe.server)
            pump.cancel()
            with contextlib.suppress(OSError):
                writer.write_eof()
        return len(self._pipes)

    def stall(self, seconds: float) -> None:
        """Forward nothing for ``seconds`` (``math.inf``: until ``stall(0)``), new links too."""
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None
        if seconds <= 0:
            self.flowing.set()
            return
        self.flowing.clear()
        if seconds != float("inf"):
            self._stall = asyncio.get_running_loop().call_later(seconds, self.flowing.set)

    def throttle(self, bytes_per_s: float | None) -> None:
        """Cap each direction of every connection at ``bytes_per_s`` (None: no cap)."""
        self.rate = bytes_per_s

    def refuse(self, on: bool = True) -> None:
        """While on, new connections are reset at once (a server that is gone)."""
        self._refusing = on

    def hold(self, after_bytes: int) -> None:
        """Live connections send ``after_bytes`` more toward the client, then hold the rest."""
        for pipe in self._pipes:
            pipe.budget = after_bytes

    def release(self) -> None:
        """End a ``hold``: live connections forward toward the client again."""
        for pipe in self._pipes:
            pipe.budget = None
            pipe.downstream.set()
