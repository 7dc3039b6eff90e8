"""A scripted strands ``Model`` that calls tools, as a real LLM does: real ``toolUse`` events.

The prompt names the tool and its input as ``name {json}`` (``calculate {"expression": "2+2"}``).
The first call streams ``BEFORE`` (no sentence end: only the flush at the tool call speaks it
early), then a ``toolUse`` block; the call after the tool's result streams ``AFTER`` and the
result's text (``FAILED`` instead, for an error result). A prompt that names no tool gets
``PLAIN``. Every call's messages are kept (``calls``), so a test reads what the model saw.

``create_agent`` is an agent factory (``VOICE_AGENT_FACTORY=agent.testing.tool_model:create_agent``)
with the example's tools, a tool that raises, a slow ``async`` one that waits until it is
cancelled, and a plain function that blocks its worker thread until released.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import AsyncIterable
from typing import Any

from strands import Agent, tool
from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent

from agent.core.llm import demo_tokens
from examples.clock_and_math_agent import SYSTEM_PROMPT, TOOLS

BEFORE = "Let me look that up for you"
AFTER = "Here is what I found."
FAILED = "Sorry, that tool did not work."
PLAIN = "I can answer that without a tool."
SLOW_STARTED: list[str] = []  # the slow tool's calls, as they start
SLOW_CANCELLED: list[str] = []  # those that were cancelled
RELEASE = threading.Event()  # lets the blocking tool return
BLOCKING_DONE = threading.Event()  # the blocking tool returned


@tool
def broken_lookup(query: str) -> str:
    """A lookup whose backend is down."""
    raise ConnectionError(f"the database is down (query {query!r})")


@tool
async def slow_lookup(query: str) -> str:
    """A lookup that takes until it is cancelled."""
    SLOW_STARTED.append(query)
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        SLOW_CANCELLED.append(query)
        raise
    return "never"


@tool
def blocking_lookup(query: str) -> str:
    """A plain function that blocks (strands runs it in a worker thread) until released."""
    RELEASE.wait(30)
    BLOCKING_DONE.set()
    return f"late news about {query}"


def _tool_text(messages: Messages) -> str | None:
    """The last message's tool result text, if it is a tool result ("!" first for an error)."""
    for block in messages[-1]["content"]:
        if "toolResult" in block:
            result = block["toolResult"]
            text = " ".join(part.get("text", "") for part in result["content"])
            return ("!" if result.get("status") == "error" else "") + text
    return None


class ToolScript(Model):
    """Calls the tool the prompt names, then speaks its result."""

    def __init__(self, delay_s: float = 0.005) -> None:
        self.delay_s = delay_s
        self.calls: list[Messages] = []

    def update_config(self, **_: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {}

    async def structured_output(self, *_: Any, **__: Any) -> Any:  # type: ignore[override]
        raise NotImplementedError
        yield {}  # pragma: no cover

    async def _text(self, text: str) -> AsyncIterable[StreamEvent]:
        yield {"contentBlockStart": {"start": {}}}
        for token in demo_tokens(text):
            await asyncio.sleep(self.delay_s)
            yield {"contentBlockDelta": {"delta": {"text": token}}}
        yield {"contentBlockStop": {}}

    async def stream(  # type: ignore[override]
        self, messages: Messages, tool_specs: Any = None, system_prompt: str | None = None, **_: Any
    ) -> AsyncIterable[StreamEvent]:
        self.calls.append(copy.deepcopy(messages))
        yield {"messageStart": {"role": "assistant"}}
        result = _tool_text(messages)
        prompt = " ".join(b.get("text", "") for b in messages[-1]["content"]).strip()
        name, _, arguments = prompt.partition(" ")
        if result is not None:
            reply = f"{FAILED} {result[1:]}" if result.startswith("!") else f"{AFTER} {result}."
            async for event in self._text(reply):
                yield event
            stop = "end_turn"
        elif arguments.startswith("{"):
            async for event in self._text(BEFORE):
                yield event
            use = {"toolUseId": f"tooluse_{len(self.calls)}", "name": name}
            yield {"contentBlockStart": {"start": {"toolUse": use}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": arguments}}}}
            yield {"contentBlockStop": {}}
            stop = "tool_use"
        else:
            async for event in self._text(PLAIN):
                yield event
            stop = "end_turn"
        yield {"messageStop": {"stopReason": stop}}
        usage = {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
        yield {"metadata": {"usage": usage, "metrics": {"latencyMs": 0}}}


def prompt(name: str, **arguments: object) -> str:
    """The prompt that makes ``ToolScript`` call ``name`` with ``arguments``."""
    return f"{name} {json.dumps(arguments)}"


def create_agent() -> Agent:
    """An agent factory: the example's tools and two more, on the scripted model."""
    tools = [*TOOLS, broken_lookup, slow_lookup, blocking_lookup]
    return Agent(model=ToolScript(), tools=tools, system_prompt=SYSTEM_PROMPT)
