"""Reliability benchmark: a soak of many turns and a fault matrix, over the real agent service
(the dev server, SSE) and a real TTS server running the fast fake engine, all in this process.

    python -m bench.reliability.run            # 500 turns on one conversation, 50 x 10, the faults
    python -m bench.reliability.run --quick    # seconds: the same code on small numbers

The fake engine and the server thread come from ``tts_server.testing``. The demo model writes
at ``--tokens-per-second`` (400: the soak is about leaks, not LLM pacing).

Soak: turns one after another on one conversation, then rounds in which every one of many
conversations takes a turn at once. After each ``SAMPLE_EVERY`` turns (each round) the process's
open file descriptors, pending asyncio tasks and RSS are sampled; growth is the last sample
minus the first one after a warm-up. Faults (``bench.reliability.faults``): a second agent
service reaches the TTS server through a ``FaultProxy``. The bounds (``BOUNDS``, the expected
fault outcomes) are checked: the exit status is 1 if one is exceeded. Writes
``docs/benchmarks/reliability.{json,md}`` (``bench.reliability.report``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import httpx

from agent.core.service import VoiceAgent
from bench.reliability.client import agent_service, pace, run_turn, tts_server
from bench.reliability.faults import fault_matrix
from bench.reliability.report import write
from bench.reliability.stats import FaultResult, Sample, SoakStats, TurnRecord, sample
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
SAMPLE_EVERY = 25
SETTLE_S = 0.2
TOKENS_PER_SECOND = 400.0  # the demo model's pace: the soak is about leaks, not LLM timing


@dataclass(frozen=True, slots=True)
class Plan:
    """How many turns, and how the demo model writes them."""

    turns: int = 500  # on one conversation
    warmup: int = 25  # its first turns, before the first sample
    conversations: int = 50
    rounds: int = 10  # turns per conversation; the first round is the warm-up
    tokens_per_second: float = TOKENS_PER_SECOND
    sentences: int = 4


QUICK = Plan(turns=8, warmup=4, conversations=3, rounds=2)


async def settled(turns: int) -> Sample:
    """A sample once the servers have closed the connections of the turns just ended."""
    await asyncio.sleep(SETTLE_S)
    return sample(turns)


async def soak_one(client: httpx.AsyncClient, plan: Plan) -> SoakStats:
    """``plan.turns`` turns, one after another, on one conversation."""
    records: list[TurnRecord] = []
    samples: list[Sample] = []
    for n in range(plan.turns):
        records.append(await run_turn(client, "soak", f"Soak turn {n % 7}"))
        done = n + 1
        if done == plan.warmup or (done > plan.warmup and done % SAMPLE_EVERY == 0):
            samples.append(await settled(done))
    if samples[-1].turns != plan.turns:
        samples.append(await settled(plan.turns))
    print(f"  one conversation: {plan.turns} turns, last sample {samples[-1]}", flush=True)
    return SoakStats.of("one conversation", 1, records, samples)


async def soak_many(client: httpx.AsyncClient, plan: Plan) -> SoakStats:
    """``plan.rounds`` rounds; in each, all ``plan.conversations`` take a turn at once."""
    records: list[TurnRecord] = []
    samples: list[Sample] = []
    for round_ in range(plan.rounds):
        turns = [
            run_turn(client, f"many-{c}", f"Conversation {c} turn {round_}")
            for c in range(plan.conversations)
        ]
        batch = await asyncio.gather(*turns)
        if round_:  # the first round opens every conversation's TTS session: the warm-up
            records += batch
        samples.append(await settled((round_ + 1) * plan.conversations))
    print(f"  {plan.conversations} conversations: last sample {samples[-1]}", flush=True)
    name = f"{plan.conversations} conversations x {plan.rounds} turns"
    return SoakStats.of(name, plan.conversations, records, samples)


async def soak(agent: ServerThread, voice_agent: VoiceAgent, plan: Plan) -> list[SoakStats]:
    """Both soak phases against one agent service."""
    for key in ["soak", *(f"many-{c}" for c in range(plan.conversations))]:
        pace(voice_agent, key, plan.sentences, plan.tokens_per_second)
    # a connection per turn, none kept alive: only what the service keeps stays open
    limits = httpx.Limits(max_connections=plan.conversations + 4, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=agent.http_url, timeout=120, limits=limits) as client:
        return [await soak_one(client, plan), await soak_many(client, plan)]


def run(plan: Plan, quick: bool) -> tuple[list[SoakStats], list[FaultResult], dict[str, object]]:
    """Start the servers, soak, inject the faults; the metadata says on what."""
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    engine = FakeEngine()
    with tts_server(engine, max_sessions=plan.conversations + 8) as tts:
        agent, voice_agent = agent_service(tts.ws_url)
        agent.start()
        try:
            phases = asyncio.run(soak(agent, voice_agent, plan))
        finally:
            agent.stop()
        faults = asyncio.run(fault_matrix(engine, tts.port, plan.tokens_per_second, quick))
    meta: dict[str, object] = {
        "mode": "quick" if quick else "full",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "python": platform.python_version(),
        "load_before": round(load_before, 2),
        "plan": asdict(plan),
        "wall_s": round(time.monotonic() - started, 1),
    }
    return phases, faults, meta


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The benchmark's flags."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small numbers, short timeouts")
    parser.add_argument("--tokens-per-second", type=float, default=TOKENS_PER_SECOND)
    parser.add_argument("--out", type=Path, default=OUT)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, write, check the bounds; 1 if one was exceeded."""
    args = parse(argv)
    plan = QUICK if args.quick else Plan()
    plan = replace(plan, tokens_per_second=args.tokens_per_second)
    phases, faults, meta = run(plan, args.quick)
    for path in write(phases, faults, meta, args.out):
        print(f"wrote {path}")
    failures = [f for phase in phases for f in phase.failures()]
    failures += [f"fault {r.fault}: {r.outcome} in {r.to_end_s:.1f} s" for r in faults if not r.ok]
    for failure in failures:
        print(f"BOUND EXCEEDED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
