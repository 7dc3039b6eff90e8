"""The fault matrix: each fault injected between the agent and the TTS server, at a turn's first
audio, by a ``FaultProxy``; its outcome against the documented one (docs/tts_client.md,
"Reconnect rules"), with the time it took.

The proxy holds the agent's TTS connection after one audio frame, so every fault lands
mid-segment. Each fault's turn is compared, segment by segment, with the fake engine's clean
output; after each fault a clean turn must speak normally again. The full run uses the
production ``SessionConfig`` (reply_timeout 15 s, reconnect_window 30 s); ``--quick`` scales the
timeouts, the stalls and the throttle down.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from bench.reliability.client import agent_service, pace, run_turn
from bench.reliability.stats import FaultResult, TurnRecord, outcome
from tts_client import SessionConfig
from tts_client.testing.faultproxy import FaultProxy
from tts_protocol import MAX_AUDIO_FRAME_BYTES, STREAM_PATH
from tts_server.engines.base import to_pcm16
from tts_server.testing.fake_engine import FakeEngine

HOLD = MAX_AUDIO_FRAME_BYTES + 1024  # `start` and one whole audio frame reach the agent
CONVERSATION = "default"  # the one the dev server pre-connects: its TTS link is the only one
SENTENCES = 2  # "You said: ..." and one more: two segments, ~300 KB of audio


@dataclass(frozen=True, slots=True)
class Profile:
    """The session's timeouts and the faults' sizes."""

    session: SessionConfig
    stall_s: float  # a stall under reply_timeout: ridden out
    throttle: float  # bytes per second


FULL = Profile(SessionConfig(), stall_s=10.0, throttle=10_000)
QUICK = Profile(
    SessionConfig(
        connect_timeout=1.0,
        reply_timeout=0.5,
        reconnect_window=0.8,
        backoff_initial=0.05,
        backoff_max=0.2,
        close_timeout=0.5,
    ),
    stall_s=0.2,
    throttle=1_000_000,
)


@dataclass(frozen=True, slots=True)
class Fault:
    """What to break, what must come of it, and how long it may take (to turn.end)."""

    name: str
    expected: str
    inject: Callable[[FaultProxy], None]
    within_s: float | None


def faults(profile: Profile) -> list[Fault]:
    """The matrix, under ``profile``."""
    s = profile.session
    quickly = s.backoff_max + 2.0  # a reconnect, then the rest of the turn
    past = s.reply_timeout + max(0.3, s.reply_timeout / 3)
    silent = s.reply_timeout + s.reconnect_window + s.connect_timeout + 2.0

    def refuse(proxy: FaultProxy) -> None:
        proxy.refuse()
        proxy.drop()

    return [
        Fault("drop (FIN both ways)", "resumed", lambda p: p.drop(), quickly),
        Fault("reset (RST both ways)", "resumed", lambda p: p.reset(), quickly),
        Fault("half-close toward the agent", "resumed", lambda p: p.half_close("client"), quickly),
        Fault("half-close toward the server", "resumed", lambda p: p.half_close("server"), quickly),
        Fault(
            f"stall {profile.stall_s:g} s",
            "delayed",
            lambda p: p.stall(profile.stall_s),
            profile.stall_s + quickly,
        ),
        Fault(
            f"stall {past:g} s (past reply_timeout)",
            "resumed",
            lambda p: p.stall(past),
            past + quickly,
        ),
        Fault(
            f"throttle to {profile.throttle / 1000:g} KB/s",
            "delayed",
            lambda p: p.throttle(profile.throttle),
            None,
        ),
        Fault(
            "silent for good (stall, new links too)",
            "tts_unavailable: TTSTimeout",
            lambda p: p.stall(math.inf),
            silent,
        ),
        Fault(
            "server gone (connections refused)",
            "tts_unavailable: TTSConnectionError",
            refuse,
            s.reconnect_window + quickly,
        ),
    ]


def heal(proxy: FaultProxy) -> None:
    """Undo every fault: the link forwards normally again."""
    proxy.stall(0)
    proxy.refuse(False)
    proxy.throttle(None)
    proxy.release()


class References:
    """The fake engine's clean PCM for each text (it is deterministic)."""

    def __init__(self, engine: FakeEngine) -> None:
        self._engine = engine
        self._pcm: dict[str, bytes] = {}

    async def of(self, text: str) -> bytes:
        if text not in self._pcm:
            prepared = self._engine.prepare(text)
            chunks = [to_pcm16(c.audio) async for c in self._engine.synthesize(prepared)]
            self._pcm[text] = b"".join(chunks)
        return self._pcm[text]


async def inject(
    client: httpx.AsyncClient, proxy: FaultProxy, fault: Fault, references: References
) -> FaultResult:
    """One turn with ``fault`` at its first audio; then a clean turn must speak normally."""
    injected_at: float | None = None

    def now() -> None:
        nonlocal injected_at
        injected_at = time.perf_counter()
        proxy.release()  # the held audio flows again, unless the fault itself stops it
        fault.inject(proxy)

    connections = proxy.connections
    proxy.hold(HOLD)
    started = time.perf_counter()
    try:
        record = await run_turn(
            client, CONVERSATION, f"Fault {fault.name}", keep=True, on_first_audio=now
        )
    finally:
        heal(proxy)
    reconnects = proxy.connections - connections
    if injected_at is None:
        raise RuntimeError(f"{fault.name}: no audio, so no fault was injected: {record.errors}")
    since = injected_at - started
    clean = [
        (bytes(record.audio.get(seq, b"")), await references.of(text))
        for seq, text in record.texts.items()
    ]
    after = await run_turn(client, CONVERSATION, "And now a clean turn", keep=True)
    healthy = await _exact(after, references) and not after.errors and after.ended
    result = FaultResult(
        fault=fault.name,
        expected=fault.expected,
        outcome=outcome(record, reconnects, all(got == ref for got, ref in clean)),
        reconnects=reconnects,
        in_order=record.in_order,
        no_repeat=all(ref.startswith(got) for got, ref in clean),
        to_error_s=round(record.errors[0][2] - since, 2) if record.errors else None,
        to_end_s=round(record.total_s - since, 2),
        within_s=fault.within_s,
        next_turn_ok=healthy,
    )
    print(f"  {fault.name}: {result.outcome} in {result.to_end_s} s", flush=True)
    return result


async def _exact(record: TurnRecord, references: References) -> bool:
    """Every segment of ``record`` carries exactly its clean audio."""
    for seq, text in record.texts.items():
        if bytes(record.audio.get(seq, b"")) != await references.of(text):
            return False
    return True


async def fault_matrix(
    engine: FakeEngine, tts_port: int, tokens_per_second: float, quick: bool
) -> list[FaultResult]:
    """Every fault, one after another, on one conversation of a second agent service."""
    profile = QUICK if quick else FULL
    references = References(engine)
    async with FaultProxy("127.0.0.1", tts_port) as proxy:
        agent, voice_agent = agent_service(proxy.url("ws", STREAM_PATH), profile.session)
        pace(voice_agent, CONVERSATION, SENTENCES, tokens_per_second)
        await asyncio.to_thread(agent.start)  # it pre-connects through the proxy on this loop
        try:
            async with httpx.AsyncClient(base_url=agent.http_url, timeout=300) as client:
                await run_turn(client, CONVERSATION, "A clean turn first")
                return [await inject(client, proxy, f, references) for f in faults(profile)]
        finally:
            await asyncio.to_thread(agent.stop)
