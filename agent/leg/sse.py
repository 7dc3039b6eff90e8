"""Events → SSE, for both front doors: each event is one ``data: <json>`` line and a blank line.

``encode`` is the only place an event becomes bytes (its ``to_json``: compact JSON,
ASCII-escaped; ``\\n`` line ends: what AgentCore's SDK itself writes). ``event_stream`` is the
response both doors return: sse-starlette's ``EventSourceResponse``, which listens for
``http.disconnect`` itself and then cancels the body iterator at once, so the turn behind it
stops. Between two events the loop runs once: a turn hands out a TTS frame's audio as a burst of
events without awaiting, and a client that hung up is noticed by the server (its
``connection_lost``) only when the loop runs, while asyncio logs every write from the fifth on
to a lost connection ("socket.send() raised exception.").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, TypeVar

from sse_starlette import EventSourceResponse

from agent.events import Event

LINE_END = "\n"
E = TypeVar("E")


def encode(event: Event) -> bytes:
    """One SSE message carrying ``event``."""
    return f"data: {event.to_json()}{LINE_END}{LINE_END}".encode()


async def _encoded(
    events: AsyncGenerator[E, None], encoder: Callable[[E], bytes]
) -> AsyncIterator[bytes]:
    async with contextlib.aclosing(events):  # closed whatever stops the stream
        async for event in events:
            yield encoder(event)
            await asyncio.sleep(0)  # a lost connection is known before the next write


def event_stream(
    events: AsyncGenerator[Any, None],
    keepalive_s: float = 0,
    encoder: Callable[[Any], bytes] = encode,
) -> EventSourceResponse:
    """``text/event-stream`` of ``events``, each message made by ``encoder`` (ours: ``encode``;
    AG-UI's: ``agent.leg.agui.encode_agui``); a ``: ping`` comment every ``keepalive_s`` (0: none).

    When the client goes away, ``events`` is cancelled and closed before the response ends.
    """
    return EventSourceResponse(_encoded(events, encoder), ping=keepalive_s, sep=LINE_END)
