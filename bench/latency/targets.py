"""Where a benchmarked turn runs: in this process, over HTTP SSE or the WebSocket leg, or on
Bedrock AgentCore."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

import httpx
from websockets.asyncio.client import ClientConnection, connect

from agent.browser_leg import SESSION_HEADER, split_audio_frame
from agent.core.turn import Turn
from agent.events import AudioDelta, Event
from agent.requests import Mode, TurnRequest
from bench.latency.stats import Timed, audio_record, compact
from tts_client import SessionPool

if TYPE_CHECKING:
    from agent.core.llm import DemoConfig
    from agent.core.service import VoiceAgent

PROMPT = "Tell me about streaming speech"
SSE_READ_BYTES = 256  # AgentCore body reads: a text event is stamped at most this late
MAX_CONCURRENT = 64  # AgentCore turns at once (threads, HTTP connections)


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _record(event: Event) -> dict[str, Any]:
    """A turn's event, in this process, as ``compact`` keeps one read off the wire."""
    if isinstance(event, AudioDelta):
        return audio_record(event.seq, len(event.pcm))
    return event.to_dict()


class Target(Protocol):
    """Runs one turn of ``PROMPT`` and returns its events, each with its arrival time."""

    async def turn(self, mode: Mode, conversation: str, demo: DemoConfig | None) -> list[Timed]:
        """``demo`` sets the demo model's reply where the target runs it, else is ignored."""
        ...


class InProcessTarget:
    """``Turn.run`` in this process, borrowing a warm TTS session, as a conversation runs it."""

    def __init__(self, pool: SessionPool) -> None:
        self._pool = pool

    async def turn(self, mode: Mode, conversation: str, demo: DemoConfig | None) -> list[Timed]:
        """A fresh strands agent with the demo model; times from just before ``Turn``."""
        from strands import Agent

        from agent.core.llm import SYSTEM_PROMPT, DemoModel

        llm = Agent(model=DemoModel(demo), system_prompt=SYSTEM_PROMPT, callback_handler=None)
        started = time.perf_counter()
        turn = Turn(TurnRequest(PROMPT, mode), llm, self._pool, received_at=started)
        return [(_since(started), _record(event)) async for event in turn.run()]


def _set_demo(voice_agent: VoiceAgent | None, conversation: str, demo: DemoConfig | None) -> None:
    """Set the local agent's demo reply for ``conversation`` (a remote agent runs its own)."""
    if demo is not None and voice_agent is not None:
        agent: Any = voice_agent.conversations.get(conversation).agent  # a strands Agent
        agent.model.update_config(**dataclasses.asdict(demo))


class HttpTarget:
    """``POST /invocations`` read as SSE: the local dev server or any agent URL."""

    def __init__(self, url: str, voice_agent: VoiceAgent | None = None) -> None:
        self._voice_agent = voice_agent  # the local dev server's: its demo model is set per turn
        self._client = httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(300, connect=10))

    async def turn(self, mode: Mode, conversation: str, demo: DemoConfig | None) -> list[Timed]:
        """Times from just before the request is sent to each event's arrival."""
        return (await self.turn_on_wire(mode, conversation, demo))[0]

    async def turn_on_wire(
        self, mode: Mode, conversation: str, demo: DemoConfig | None
    ) -> tuple[list[Timed], int]:
        """The turn's timed events and the bytes of its SSE body."""
        _set_demo(self._voice_agent, conversation, demo)
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
            return events, response.num_bytes_downloaded

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()


class WebSocketTarget:
    """The WebSocket leg (``/ws``): one socket per conversation, opened once and kept."""

    def __init__(self, url: str, voice_agent: VoiceAgent | None = None) -> None:
        self._url = url
        self._voice_agent = voice_agent
        self._sockets: dict[str, ClientConnection] = {}

    async def turn(self, mode: Mode, conversation: str, demo: DemoConfig | None) -> list[Timed]:
        """Times from just before the prompt is sent to each frame's arrival."""
        return (await self.turn_on_wire(mode, conversation, demo))[0]

    async def turn_on_wire(
        self, mode: Mode, conversation: str, demo: DemoConfig | None
    ) -> tuple[list[Timed], int]:
        """The turn's timed events (binary frames as compact ``audio.delta``) and its bytes."""
        _set_demo(self._voice_agent, conversation, demo)
        socket = await self._socket(conversation)
        events: list[Timed] = []
        wire = 0
        started = time.perf_counter()
        await socket.send(json.dumps({"type": "prompt", "prompt": PROMPT, "mode": mode}))
        while True:
            frame = await socket.recv()
            wire += len(frame)  # text frames are ASCII JSON: characters are bytes
            if isinstance(frame, bytes):
                seq, pcm = split_audio_frame(frame)
                events.append((_since(started), audio_record(seq, len(pcm))))
                continue
            event = json.loads(frame)
            events.append((_since(started), event))
            if event["type"] == "turn.end":
                return events, wire

    async def _socket(self, conversation: str) -> ClientConnection:
        if conversation not in self._sockets:
            headers = {SESSION_HEADER: conversation}
            socket = await connect(self._url, additional_headers=headers, max_size=None)
            await socket.recv()  # `ready`
            self._sockets[conversation] = socket
        return self._sockets[conversation]

    async def aclose(self) -> None:
        """Close every socket."""
        for socket in self._sockets.values():
            await socket.close()
        self._sockets.clear()


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
