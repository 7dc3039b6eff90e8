"""The AgentCore front door's reliance on the SDK's worker loop, the loop-to-loop relay, and
the error shape of what its routing refuses."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import pytest
from bedrock_agentcore.runtime import BedrockAgentCoreApp
from starlette.responses import JSONResponse
from starlette.testclient import TestClient

from agent.config import AgentConfig
from agent.doors.agentcore import create_app, relay_from_loop, sdk_worker_loop
from agent.events import Event, TextDelta

NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port


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


@pytest.mark.parametrize(
    ("method", "path", "status", "error", "allow"),
    [
        (
            "GET",
            "/invocations",
            405,
            {"code": "method_not_allowed", "message": "GET /invocations is not allowed; use POST"},
            "POST",
        ),
        ("PUT", "/ping", 405, {"code": "method_not_allowed"}, "HEAD, GET"),
        ("GET", "/nowhere", 404, {"code": "not_found", "message": "nothing at GET /nowhere"}, None),
    ],
)
def test_what_the_routing_refuses_has_the_typed_error_shape(
    method: str, path: str, status: int, error: dict[str, str], allow: str | None
) -> None:
    with TestClient(create_app(AgentConfig(model="demo", tts_url=NOWHERE))) as client:
        response = client.request(method, path)
    assert response.status_code == status
    # Starlette lists a route's methods from a set: their order changes with the hash seed
    assert methods(response.headers.get("allow")) == methods(allow)
    body = response.json()
    assert body.keys() == {"error"} and body["error"].keys() == {"code", "message"}
    assert error.items() <= body["error"].items()


def methods(allow: str | None) -> set[str] | None:
    return None if allow is None else set(allow.split(", "))


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_the_sdks_lines_are_written_once_by_the_roots_handler(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The SDK gives its logger a handler of its own, which propagates to the root's too."""
    logging.getLogger("bedrock_agentcore.app").handlers.clear()  # as in a fresh process
    app = create_app(AgentConfig(model="demo", tts_url=NOWHERE))
    root, lines = logging.getLogger(), Lines()
    level = root.level
    root.addHandler(lines)
    root.setLevel(logging.INFO)
    try:
        app.logger.info("Invocation completed successfully (0.001s)")
    finally:
        root.removeHandler(lines)
        root.setLevel(level)
    assert lines.messages == ["Invocation completed successfully (0.001s)"]
    assert "Invocation completed" not in capsys.readouterr().err  # no second, SDK-made line
