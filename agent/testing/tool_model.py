"""A scripted strands ``Model`` that calls tools, as a real LLM does: real ``toolUse`` events.

The prompt names the tool and its input as ``name {json}`` (``calculate {"expression": "2+2"}``).
The first call streams ``BEFORE`` (no sentence end: only the flush at the tool call speaks it
early), then a ``toolUse`` block; the call after the tool's result streams ``AFTER`` and the
result's text (``FAILED`` instead, for an error result). A prompt that names no tool gets
``PLAIN``. Every call's messages are kept (``calls``), so a test reads what the model saw.
Each call waits ``first_token_delay_s``, then streams ``tokens_per_second`` (as
``agent.core.llm.DemoConfig`` times the demo model). The tests (``tests/agent/tool_model.py``)
and the tool-turn benchmark (``bench/latency/tool_turn.py``) drive it.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterable
from typing import Any

from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent

from agent.core.llm import demo_tokens

BEFORE = "Let me look that up for you"
AFTER = "Here is what I found."
FAILED = "Sorry, that tool did not work."
PLAIN = "I can answer that without a tool."


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

    def __init__(self, tokens_per_second: float = 200.0, first_token_delay_s: float = 0.0) -> None:
        if not tokens_per_second > 0 or not first_token_delay_s >= 0:
            raise ValueError(
                f"ToolScript needs tokens_per_second > 0 and first_token_delay_s >= 0, "
                f"not {tokens_per_second} and {first_token_delay_s}"
            )
        self.tokens_per_second = tokens_per_second
        self.first_token_delay_s = first_token_delay_s
        self.calls: list[Messages] = []

    def update_config(self, **_: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {
            "tokens_per_second": self.tokens_per_second,
            "first_token_delay_s": self.first_token_delay_s,
        }

    async def structured_output(self, *_: Any, **__: Any) -> Any:  # type: ignore[override]
        raise NotImplementedError
        yield {}  # pragma: no cover

    async def _text(self, text: str) -> AsyncIterable[StreamEvent]:
        yield {"contentBlockStart": {"start": {}}}
        loop = asyncio.get_running_loop()
        due = loop.time()
        for token in demo_tokens(text):
            due += 1.0 / self.tokens_per_second
            await asyncio.sleep(max(0.0, due - loop.time()))
            yield {"contentBlockDelta": {"delta": {"text": token}}}
        yield {"contentBlockStop": {}}

    async def stream(  # type: ignore[override]
        self, messages: Messages, tool_specs: Any = None, system_prompt: str | None = None, **_: Any
    ) -> AsyncIterable[StreamEvent]:
        self.calls.append(copy.deepcopy(messages))
        yield {"messageStart": {"role": "assistant"}}
        await asyncio.sleep(self.first_token_delay_s)
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
