"""An AG-UI client for the tests: every event parsed by ag-ui-protocol's own models, and a run's
stream checked against the protocol's order (a run's start first and its end last, text and tool
calls opened before they are used and closed before the run ends).

``run_sse`` posts a ``RunAgentInput`` and reads the SSE stream; ``run_input`` builds one;
``check_run`` asserts the order and returns the events; ``voice`` reads the speech custom events.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Event,
    EventType,
    RunErrorEvent,
    RunFinishedEvent,
)
from pydantic import TypeAdapter

RECEIVE_S = 60
EVENT = TypeAdapter(Event)
TERMINAL = (EventType.RUN_FINISHED, EventType.RUN_ERROR)


def parse(data: str | bytes) -> BaseEvent:
    """One event, by ag-ui-protocol's discriminated union (fails on anything it would not take)."""
    event: BaseEvent = EVENT.validate_json(data)
    return event


def run_input(prompt: str, thread: str, **speech: object) -> dict[str, Any]:
    """A ``RunAgentInput`` as a front end sends it: one user message, ``speech`` forwarded."""
    body: dict[str, Any] = {
        "threadId": thread,
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "messages": [{"id": "m1", "role": "user", "content": prompt}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {"speech": speech} if speech else {},
    }
    return body


async def sse_events(base_url: str, body: object) -> AsyncIterator[BaseEvent]:
    """POST ``body`` to ``/invocations``; each event of the SSE stream, parsed, as it comes.
    Leaving the loop hangs up."""
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=RECEIVE_S) as http,
        http.stream("POST", "/invocations", json=body) as response,
    ):
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                yield parse(line.removeprefix("data: "))


async def run_sse(base_url: str, body: object) -> list[BaseEvent]:
    """POST ``body`` to ``/invocations`` and read the whole SSE stream, each event parsed."""
    return [event async for event in sse_events(base_url, body)]


def check_run(events: list[BaseEvent]) -> list[BaseEvent]:
    """Assert AG-UI's order on one run's events; returns them."""
    assert events and events[0].type == EventType.RUN_STARTED, kinds(events)[:3]
    assert events[-1].type in TERMINAL, kinds(events)[-3:]
    assert not [e for e in events[:-1] if e.type in TERMINAL or e.type == EventType.RUN_STARTED][1:]
    text: str | None = None
    tools: dict[str, str] = {}  # id -> "open" | "ended" | "result"
    for event in events[1:-1]:
        kind, fields = event.type, event.model_dump()
        if kind == EventType.TEXT_MESSAGE_START:
            assert text is None, "a text message inside another"
            text = fields["message_id"]
        elif kind in (EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END):
            assert fields["message_id"] == text, f"{kind} outside its message"
            text = None if kind == EventType.TEXT_MESSAGE_END else text
        elif kind == EventType.TOOL_CALL_START:
            assert text is None, "a tool call inside a text message"
            assert fields["tool_call_id"] not in tools
            tools[fields["tool_call_id"]] = "open"
        elif kind in (EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END):
            assert tools.get(fields["tool_call_id"]) == "open", f"{kind} of a call not open"
            if kind == EventType.TOOL_CALL_END:
                tools[fields["tool_call_id"]] = "ended"
        elif kind == EventType.TOOL_CALL_RESULT:
            assert tools.get(fields["tool_call_id"]) == "ended", "a result before its call ended"
            tools[fields["tool_call_id"]] = "result"
    assert text is None, "a text message left open"
    assert "open" not in tools.values(), "a tool call left open"
    return events


def kinds(events: list[BaseEvent]) -> list[str]:
    """Each event's type, and a custom event's name."""
    return [e.name if isinstance(e, CustomEvent) else e.type.value for e in events]


def customs(events: list[BaseEvent], name: str) -> list[dict[str, Any]]:
    """The values of the custom events called ``name``."""
    return [e.value for e in events if isinstance(e, CustomEvent) and e.name == name]


def index(events: list[BaseEvent], kind: str, last: bool = False) -> int:
    """Where the first (or last) event of ``kind`` (a type, or a custom event's name) is."""
    found = [i for i, k in enumerate(kinds(events)) if k == kind]
    assert found, f"no {kind} in {kinds(events)}"
    return found[-1] if last else found[0]


def pcm_by_segment(events: list[BaseEvent]) -> dict[int, bytes]:
    """The audio of each sentence, decoded from its ``voice.audio`` events."""
    pcm: dict[int, bytes] = {}
    for value in customs(events, "voice.audio"):
        seq = value["segmentId"]
        pcm[seq] = pcm.get(seq, b"") + base64.b64decode(value["audio"])
    return pcm


def text_of(events: list[BaseEvent]) -> str:
    """The run's streamed text, all messages joined."""
    return "".join(
        e.model_dump()["delta"] for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT
    )


def ended(events: list[BaseEvent]) -> RunFinishedEvent | RunErrorEvent:
    """The run's last event, its end."""
    last = events[-1]
    assert isinstance(last, RunFinishedEvent | RunErrorEvent)
    return last
