"""A SageMaker-style WebSocket gateway for tests and local demos.

It proxies each client connection to the TTS server the way SageMaker's bidirectional stream
reaches a container: every client message is forwarded as a BINARY frame (SageMaker's default
when a part's DataType is omitted), server frames pass through with their type, and server
messages larger than ``fragment_bytes`` are sent as a fragmented message, the WebSocket
analogue of PARTIAL parts. ``latency_s`` adds one-way delay to every message and two round
trips (TCP and the HTTP upgrade) to every new connection, for benchmarks.

    python -m tts_client.testing.gateway --upstream ws://127.0.0.1:8080/ws --port 9000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Iterator, Sequence

from websockets.asyncio.client import connect
from websockets.asyncio.connection import Connection
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.typing import Data

from tts_protocol import STREAM_PATH

INTERNAL_ERROR = 1011
UNSENDABLE_CLOSE_CODES = (1005, 1006, 1015)  # reserved: they describe a close, never travel


class Gateway:
    """Serve on ``host:port`` (0: any free port) and forward to ``upstream``."""

    def __init__(
        self,
        upstream: str,
        *,
        fragment_bytes: int | None = 4096,
        latency_s: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.upstream = upstream
        self.fragment_bytes = fragment_bytes
        self.latency_s = latency_s
        self.connections = 0  # client connections accepted so far
        self._host = host
        self._port = port
        self._server: Server | None = None

    @property
    def url(self) -> str:
        """The URL clients connect to."""
        if self._server is None:
            raise RuntimeError("the gateway is not started")
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"ws://{self._host}:{port}{STREAM_PATH}"

    async def start(self) -> Gateway:
        """Start listening."""
        self._server = await serve(
            self._handle, self._host, self._port, max_size=None, compression=None
        )
        return self

    async def aclose(self) -> None:
        """Stop listening and close every proxied connection."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def __aenter__(self) -> Gateway:
        return await self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def _handle(self, client: ServerConnection) -> None:
        self.connections += 1
        await asyncio.sleep(3 * self.latency_s)  # with `ready`'s own delay: two round trips
        try:
            server = await connect(self.upstream, max_size=None, compression=None, proxy=None)
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            await client.close(INTERNAL_ERROR, f"upstream unavailable: {exc}"[:120])
            return
        async with server:
            pumps = [
                asyncio.create_task(self._pump(client, server, to_server=True)),
                asyncio.create_task(self._pump(server, client, to_server=False)),
            ]
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            code = server.close_code or 1000
            if code in UNSENDABLE_CLOSE_CODES:
                code = INTERNAL_ERROR
            await client.close(code, server.close_reason or "")

    async def _pump(self, source: Connection, sink: Connection, *, to_server: bool) -> None:
        """Forward messages from ``source`` to ``sink`` after ``latency_s`` each."""
        queue: asyncio.Queue[tuple[float, Data] | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def receive() -> None:
            try:
                async for message in source:
                    queue.put_nowait((loop.time() + self.latency_s, message))
            except ConnectionClosed:
                pass
            queue.put_nowait(None)

        reader = asyncio.create_task(receive())
        try:
            while (item := await queue.get()) is not None:
                due, message = item
                await asyncio.sleep(max(0.0, due - loop.time()))
                if to_server:  # SageMaker delivers client messages as BINARY
                    message = message.encode() if isinstance(message, str) else message
                    await sink.send(message)
                else:
                    await sink.send(self._fragments(message))
        except ConnectionClosed:
            pass
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    def _fragments(self, message: Data) -> Data | Iterator[Data]:
        """``message`` whole, or as fragments of ``fragment_bytes`` if it is larger."""
        size = self.fragment_bytes
        if size is None or len(message) <= size:
            return message
        return (message[i : i + size] for i in range(0, len(message), size))


async def _serve(
    upstream: str, host: str, port: int, fragment_bytes: int, latency_s: float
) -> None:
    gateway = Gateway(
        upstream, fragment_bytes=fragment_bytes, latency_s=latency_s, host=host, port=port
    )
    async with gateway:
        print(f"gateway: {gateway.url} -> {upstream}", flush=True)
        await asyncio.Future()


def main(argv: Sequence[str] | None = None) -> None:
    """Run a gateway until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the TTS server's WebSocket URL")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--fragment-bytes", type=int, default=4096)
    parser.add_argument("--latency-ms", type=float, default=0.0, help="one-way delay")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            _serve(args.upstream, args.host, args.port, args.fragment_bytes, args.latency_ms / 1000)
        )


if __name__ == "__main__":
    main()
