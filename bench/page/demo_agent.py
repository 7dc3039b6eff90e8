"""The page benchmark's agent: the demo model, whose reply to a prompt that starts with
``LONG_PROMPT`` is all of its sentences (about 45 s of speech), for the long-reply runs.

    voice-agent dev --agent bench.page.demo_agent:create_agent
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from dataclasses import replace
from typing import Any

from strands import Agent
from strands.types.content import Messages
from strands.types.streaming import StreamEvent

from agent.core.llm import DEMO_MOST_SENTENCES, DemoModel, last_user_text

LONG_PROMPT = "Tell me everything"


class PageDemoModel(DemoModel):
    """The demo model; ``LONG_PROMPT`` asks for every sentence it has."""

    async def stream(  # type: ignore[override]
        self,
        messages: Messages,
        tool_specs: list[Any] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterable[StreamEvent]:
        config = self.get_config()
        if last_user_text(messages).startswith(LONG_PROMPT):
            self._demo = replace(config, sentences=DEMO_MOST_SENTENCES)
        try:
            async for event in super().stream(messages, tool_specs, system_prompt, **kwargs):
                yield event
        finally:
            self._demo = config


def create_agent() -> Agent:
    """A new conversation's agent."""
    return Agent(model=PageDemoModel())
