"""The reliability benchmark's parts: the two servers in this process, and a turn over SSE as
a client sees it (``TurnRecord``)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx

from agent.browser_leg import SESSION_HEADER
from agent.config import AgentConfig
from agent.core.service import VoiceAgent
from agent.doors import devserver
from bench.reliability.stats import TurnRecord
from tts_client import SessionConfig
from tts_server.app import create_app
from tts_server.settings import Settings
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

READY_LIMIT_S = 60.0


@contextmanager
def tts_server(engine: FakeEngine, max_sessions: int) -> Iterator[ServerThread]:
    """A real TTS server around ``engine`` on loopback, healthy."""
    settings = Settings(max_sessions=max_sessions)
    server = ServerThread(create_app(settings, loader=lambda _settings: engine)).start()
    try:
        deadline = time.monotonic() + READY_LIMIT_S
        while httpx.get(f"{server.http_url}/ping", timeout=5).status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("the TTS server never became healthy")
            time.sleep(0.05)
        yield server
    finally:
        server.stop()


def agent_service(
    tts_url: str, session: SessionConfig | None = None
) -> tuple[ServerThread, VoiceAgent]:
    """The dev server (demo model) speaking through ``tts_url``, not started yet, and its
    ``VoiceAgent``; ``session`` replaces the TTS sessions' default ``SessionConfig``."""
    app = devserver.create_app(AgentConfig(model="demo", tts_url=tts_url))
    voice_agent: VoiceAgent = app.state.voice_agent
    if session is not None:
        voice_agent.conversations.pool.config = session
    return ServerThread(app), voice_agent


def pace(voice_agent: VoiceAgent, key: str, sentences: int, tokens_per_second: float) -> None:
    """Create conversation ``key``, its demo model at this pace (before any traffic to it)."""
    model = voice_agent.conversations.get(key).agent.model  # type: ignore[attr-defined]
    model.update_config(
        sentences=sentences, tokens_per_second=tokens_per_second, first_token_delay_s=0.02
    )


async def run_turn(
    client: httpx.AsyncClient,
    key: str,
    prompt: str,
    *,
    keep: bool = False,
    on_first_audio: Callable[[], None] | None = None,
) -> TurnRecord:
    """POST one turn and read its SSE stream to the end."""
    record = TurnRecord()
    started = time.perf_counter()
    headers = {SESSION_HEADER: key}
    async with client.stream("POST", "/invocations", json={"prompt": prompt}, headers=headers) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data:"):
                continue
            event = json.loads(line.removeprefix("data:"))
            kind = record.last = event["type"]
            if kind == "segment" and keep:
                record.texts[event["seq"]] = event["text"]
            elif kind == "audio.delta":
                record.in_order &= event["seq"] >= record.audio_seq
                record.audio_seq = event["seq"]
                if record.first_audio_s is None:
                    record.first_audio_s = time.perf_counter() - started
                    if on_first_audio is not None:
                        on_first_audio()
                if keep:
                    record.audio.setdefault(event["seq"], bytearray()).extend(
                        base64.b64decode(event["audio"])
                    )
            elif kind == "error":
                at = time.perf_counter() - started
                record.errors.append((event["code"], event["message"], at))
    record.total_s = time.perf_counter() - started
    return record
