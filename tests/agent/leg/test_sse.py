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

    app = Starlette(routes=[Route("/finite", finite), Route("/endless", endless)])
    running = ServerThread(app).start()
    yield running
    running.stop()


def test_the_body_is_the_encoded_events(server: ServerThread) -> None:
    response = httpx.get(f"{server.http_url}/finite", timeout=10)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content == encode(TextDelta("a")) + encode(TurnEnd())


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
