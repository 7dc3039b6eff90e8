"""Where a benchmarked turn runs: in this process, over HTTP SSE, or on Bedrock AgentCore."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from agent.pipeline import Mode, Turn, TurnRequest
from bench.latency_stats import Timed, compact
from tts_client import TTSSession

if TYPE_CHECKING:
    from agent.llm import DemoConfig
    from agent.service import VoiceAgent

PROMPT = "Tell me about streaming speech"
SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
SSE_READ_BYTES = 256  # AgentCore body reads: a text event is stamped at most this late
MAX_CONCURRENT = 64  # AgentCore turns at once (threads, HTTP connections)


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


class Target(Protocol):
    """Runs one turn of ``PROMPT`` and returns its events, each with its arrival time."""

    async def turn(self, mode: Mode, conversation: str, demo: DemoConfig | None) -> list[Timed]:
        """``demo`` sets the demo model's reply where the target runs it, else is ignored."""
        ...


class InProcessTarget:
    """``Turn.run`` in this process on one warm TTS session, as a conversation runs it."""

    def __init__(self, session: TTSSession) -> None:
        self._session = session

    async def _tts(self) -> TTSSession:
        return self._session

    async def turn(self, mode: Mode, conversation: str, demo: DemoConfig | None) -> list[Timed]:
        """A fresh strands agent with the demo model; times from just before ``Turn``."""
        from strands import Agent

        from agent.llm import SYSTEM_PROMPT, DemoModel

        llm = Agent(model=DemoModel(demo), system_prompt=SYSTEM_PROMPT, callback_handler=None)
        started = time.perf_counter()
        turn = Turn(TurnRequest(PROMPT, mode), llm, self._tts, received_at=started)
        return [(_since(started), compact(event)) async for event in turn.run()]


class HttpTarget:
    """``POST /invocations`` read as SSE: the local dev server or any agent URL."""

    def __init__(self, url: str, voice_agent: VoiceAgent | None = None) -> None:
        self._voice_agent = voice_agent  # the local dev server's: its demo model is set per turn
        self._client = httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(300, connect=10))

    async def turn(self, mode: Mode, conversation: str, demo: DemoConfig | None) -> list[Timed]:
        """Times from just before the request is sent to each event's arrival."""
        if demo is not None and self._voice_agent is not None:
            agent: Any = self._voice_agent.conversations.get(conversation).agent  # strands Agent
            agent.model.update_config(**dataclasses.asdict(demo))
        events: list[Timed] = []
        started = time.perf_counter()
        async with self._client.stream(
            "POST",
            "/invocations",
            json={"prompt": PROMPT, "mode": mode},
            headers={SESSION_HEADER: conversation},
        ) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    events.append((_since(started), compact(json.loads(line[5:]))))
        return events

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()


class AgentCoreTarget:
    """``InvokeAgentRuntime`` on Bedrock AgentCore (boto3), its SSE body read as it arrives."""

    def __init__(
        self, arn: str, region: str | None = None, qualifier: str = "DEFAULT", client: Any = None
    ) -> None:
        self.arn = arn
        self.qualifier = qualifier
        self._client = client or agentcore_client(region or arn.split(":")[3])
        self._sessions: dict[str, str] = {}
        self._threads = ThreadPoolExecutor(MAX_CONCURRENT, thread_name_prefix="agentcore")

    def request(self, mode: Mode, conversation: str) -> dict[str, Any]:
        """The ``invoke_agent_runtime`` arguments; one runtime session per conversation."""
        session = self._sessions.setdefault(conversation, f"bench-{conversation}-{uuid.uuid4()}")
        return {
            "agentRuntimeArn": self.arn,
            "qualifier": self.qualifier,
            "runtimeSessionId": session,  # at least 33 characters
            "contentType": "application/json",
            "accept": "text/event-stream",
            "payload": json.dumps({"prompt": PROMPT, "mode": mode}).encode(),
        }

    async def turn(self, mode: Mode, conversation: str, demo: DemoConfig | None) -> list[Timed]:
        """The remote agent runs its own model: ``demo`` is ignored."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._threads, self._invoke, self.request(mode, conversation)
        )

    def _invoke(self, request: dict[str, Any]) -> list[Timed]:
        started = time.perf_counter()
        body = self._client.invoke_agent_runtime(**request)["response"]
        return [
            (_since(started), compact(json.loads(line[5:])))
            for line in body.iter_lines(chunk_size=SSE_READ_BYTES)
            if line.startswith(b"data:")
        ]


def agentcore_client(region: str) -> Any:
    """A ``bedrock-agentcore`` client: no retries (a retry would run the turn twice)."""
    import boto3
    from botocore.config import Config

    config = Config(
        read_timeout=300, retries={"total_max_attempts": 1}, max_pool_connections=MAX_CONCURRENT
    )
    return boto3.client("bedrock-agentcore", region_name=region, config=config)
