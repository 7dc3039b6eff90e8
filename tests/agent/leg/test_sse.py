"""The one SSE encoder and response of both front doors, over a real socket."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncGenerator, Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent.events import Event, TextDelta, TurnEnd
from agent.leg.sse import encode, event_stream
from tts_server.testing.server_thread import ServerThread

WAIT_S = 5.0


def test_an_event_is_one_compact_data_line_and_a_blank_line() -> None:
    event = TextDelta("Grüße,\nworld")
    line = encode(event)
    assert line == b'data: {"type":"text.delta","text":"Gr\\u00fc\\u00dfe,\\nworld"}\n\n'
    assert json.loads(line.decode("ascii").removeprefix("data: ")) == event.to_dict()


class Forever:
    """An endless event source that records when it was closed."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    async def events(self) -> AsyncGenerator[Event, None]:
        try:
            for n in range(1_000_000):
                yield TextDelta(str(n))
                await asyncio.sleep(0.01)
        finally:
            self.closed.set()


@pytest.fixture(scope="module")
def forever() -> Forever:
    return Forever()


@pytest.fixture(scope="module")
def server(forever: Forever) -> Iterator[ServerThread]:
    async def finite(request: Request) -> Response:
        async def events() -> AsyncGenerator[Event, None]:
            yield TextDelta("a")
            yield TurnEnd()

        return event_stream(events())

    async def endless(request: Request) -> Response:
        return event_stream(forever.events())

    async def pinged(request: Request) -> Response:
        async def events() -> AsyncGenerator[Event, None]:
            await asyncio.sleep(0.3)  # quiet: the keep-alive speaks meanwhile
            yield TurnEnd()

        return event_stream(events(), keepalive_s=0.05)

    routes = [Route("/finite", finite), Route("/endless", endless), Route("/pinged", pinged)]
    app = Starlette(routes=routes)
    running = ServerThread(app).start()
    yield running
    running.stop()


def test_the_body_is_the_encoded_events(server: ServerThread) -> None:
    response = httpx.get(f"{server.http_url}/finite", timeout=10)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content == encode(TextDelta("a")) + encode(TurnEnd())


def test_a_keep_alive_pings_only_when_asked_and_ends_its_lines_as_events_do(
    server: ServerThread,
) -> None:
    async def nothing() -> AsyncGenerator[Event, None]:
        yield TurnEnd()

    assert event_stream(nothing()).ping_interval == 0  # 0: none
    assert event_stream(nothing(), keepalive_s=2.5).ping_interval == 2.5
    body = httpx.get(f"{server.http_url}/pinged", timeout=10).content
    messages = body.split(b"\n\n")
    assert messages[-1] == b"" and messages[-2] == b'data: {"type":"turn.end"}'
    assert messages[:-2] and all(m.startswith(b": ping") for m in messages[:-2])
    assert b"\r" not in body


async def test_a_burst_of_events_is_handed_on_without_waiting() -> None:
    async def burst() -> AsyncGenerator[Event, None]:
        for n in range(20):
            yield TextDelta(str(n))

    async with asyncio.timeout(WAIT_S):  # a turn's burst of audio events is not spread out
        body = [chunk async for chunk in event_stream(burst()).body_iterator]
    assert body == [encode(TextDelta(str(n))) for n in range(20)]


async def test_a_client_that_goes_away_closes_the_events_at_once(
    server: ServerThread, forever: Forever
) -> None:
    async with (
        httpx.AsyncClient(base_url=server.http_url, timeout=10) as client,
        client.stream("GET", "/endless") as response,
    ):
        lines = response.aiter_lines()
        assert await anext(lines) == 'data: {"type":"text.delta","text":"0"}'
    assert await asyncio.to_thread(forever.closed.wait, 2)
