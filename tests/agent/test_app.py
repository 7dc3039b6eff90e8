"""The AgentCore front door's reliance on the SDK's worker loop, and the loop-to-loop relay."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import pytest
from bedrock_agentcore.runtime import BedrockAgentCoreApp
from starlette.responses import JSONResponse
from starlette.testclient import TestClient

from agent.app import relay_from_loop, sdk_worker_loop
from agent.events import Event, TextDelta


def test_the_sdk_runs_async_entrypoints_on_its_worker_loop() -> None:
    """If this fails, the SDK changed how it runs handlers: sessions would be on the wrong loop."""
    app = BedrockAgentCoreApp()
    worker = sdk_worker_loop(app)
    assert worker.is_running() and sdk_worker_loop(app) is worker

    @app.entrypoint
    async def invoke(payload: dict[str, Any]) -> JSONResponse:
        return JSONResponse({"on_worker_loop": asyncio.get_running_loop() is worker})

    with TestClient(app) as client:
        response = client.post("/invocations", json={})
    assert response.json() == {"on_worker_loop": True}


def test_a_missing_worker_loop_api_fails_loudly() -> None:
    with pytest.raises(RuntimeError, match="_ensure_worker_loop"):
        sdk_worker_loop(object())  # type: ignore[arg-type]


@pytest.fixture
def other_loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


async def test_relay_passes_every_event_from_the_other_loop(
    other_loop: asyncio.AbstractEventLoop,
) -> None:
    loops: set[asyncio.AbstractEventLoop] = set()

    async def events() -> AsyncGenerator[Event, None]:
        for n in range(5):
            loops.add(asyncio.get_running_loop())
            yield TextDelta(str(n))

    relayed = [e async for e in relay_from_loop(events(), other_loop)]
    assert relayed == [TextDelta(str(n)) for n in range(5)] and loops == {other_loop}


async def test_closing_the_relay_cancels_the_source_on_its_loop(
    other_loop: asyncio.AbstractEventLoop,
) -> None:
    cancelled = threading.Event()

    async def events() -> AsyncGenerator[Event, None]:
        try:
            while True:
                yield TextDelta("more")
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    relay = relay_from_loop(events(), other_loop)
    assert await anext(relay) == TextDelta("more")
    await relay.aclose()  # what the SSE response does when the client goes away
    assert await asyncio.to_thread(cancelled.wait, 2)
