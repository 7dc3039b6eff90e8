"""``SessionLink``: one connection of a ``TTSSession`` (the live one, or one being retired)."""

from __future__ import annotations

import asyncio
import contextlib

from tts_client.errors import TTSError, TTSTimeout, raise_if_failed
from tts_client.transports.base import Connection, Transport
from tts_protocol import ClientProtocol, Close, encode


async def open_link(transport: Transport, protocol: ClientProtocol, within_s: float) -> SessionLink:
    """Connect and read ``ready`` into ``protocol``, all within ``within_s``; raises
    ``TTSError``."""
    try:
        async with asyncio.timeout(within_s):
            conn = await transport.connect()
            try:
                protocol.connection_opened()
                for event in protocol.receive(await conn.recv()):
                    raise_if_failed(event)
            except BaseException:
                await conn.aclose()
                raise
    except TimeoutError as exc:
        raise TTSTimeout(f"{transport.endpoint}: not ready within {within_s} s") from exc
    return SessionLink(conn, asyncio.get_running_loop().time())


class SessionLink:
    """A connection and what the session knows about it."""

    def __init__(self, conn: Connection, opened_at: float) -> None:
        self.conn = conn
        self.opened_at = opened_at
        self.retiring = False  # too old: send nothing more, replace once idle
        self.done = False  # replaced or closed: its frames are no longer the protocol's
        self.closed = asyncio.Event()  # set when its reader saw the connection end
        self.watchdog: asyncio.Timeout | None = None

    async def retire(self, *, graceful: bool, close_timeout: float) -> None:
        """Close; gracefully: send 'close' and let the server close first (``close_timeout``)."""
        if graceful:
            with contextlib.suppress(TTSError, TimeoutError):
                async with asyncio.timeout(close_timeout):
                    await self.conn.send(encode(Close()))
                    await self.closed.wait()
        await self.conn.aclose()
