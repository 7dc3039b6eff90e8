"""The tool-calling agent of the tests: the scripted model (``agent/testing/tool_model.py``) with
the example's tools and three of the tests' own.

``create_agent`` is an agent factory (``VOICE_AGENT_FACTORY=tests.agent.tool_model:create_agent``)
with the example's tools, a tool that raises, a slow ``async`` one that waits until it is
cancelled, and a plain function that blocks its worker thread until released.
"""

from __future__ import annotations

import asyncio
import threading

from strands import Agent, tool

from agent.testing.tool_model import ToolScript
from examples.clock_and_math_agent import SYSTEM_PROMPT, TOOLS

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


def create_agent() -> Agent:
    """An agent factory: the example's tools and three more, on the scripted model."""
    tools = [*TOOLS, broken_lookup, slow_lookup, blocking_lookup]
    return Agent(model=ToolScript(), tools=tools, system_prompt=SYSTEM_PROMPT)
