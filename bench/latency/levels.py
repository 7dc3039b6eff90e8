"""Measuring each level: the TTS transport, stream vs. batch turns with their floor, the
browser leg (SSE vs. WebSocket), concurrency.

The floor of a turn is the moment its first segment's text was complete plus the time to first
audio of that text spoken alone on the same TTS server, measured right after the turn. Stream
and batch runs alternate (ABBA) so that drift hits both.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent.requests import TURN_MODES
from bench.latency import tts_transport_bench as transport_bench
from bench.latency.plan import Plan
from bench.latency.stats import Timed, figures, percentile, ratio, spread, summarize, timeline
from bench.latency.targets import HttpTarget, InProcessTarget, Target, WebSocketTarget
from tts_client import SessionPool, TTSSession, WebSocketTransport

if TYPE_CHECKING:
    from agent.core.llm import DemoConfig

BARRIER_TEXT = "Done."
LEGS = ("sse", "websocket")
LEG_METRICS = ("ttfa_ms", "total_ms", "audio_ms", "wire_bytes", "bytes_per_audio_s")


@dataclasses.dataclass(frozen=True, slots=True)
class Stack:
    """Where the measured parts run."""

    tts_url: str | None  # None: no TTS access (a remote agent): no floor, transport, in-process
    agent: Target
    agent_name: str  # "http" (the local dev server) or "remote"
    local_agent: bool  # the demo model's reply can be set
    websocket: WebSocketTarget | None = None  # the same agent's /ws, for the leg comparison


async def lone_first_audio_ms(tts_url: str, text: str) -> float | None:
    """``text`` spoken alone on a fresh connection: ms from its ``speak`` to its first audio.

    The rest of it is cancelled. The engine still finishes the model piece in progress, so a
    short segment follows: once it has ended, the engine is idle for the next measurement.
    """
    async with TTSSession(WebSocketTransport(tts_url)) as session:
        segment = await session.speak(text)
        async for _ in segment:
            break
        await session.cancel(segment)
        await (await session.speak(BARRIER_TEXT)).read()
    first = segment.timings.first_audio_s
    return None if first is None else round(first * 1000, 1)


async def _add_floor(run: dict[str, Any], tts_url: str | None) -> None:
    text = run["segment_detail"][0]["text"] if run["segment_detail"] else None
    lone = await lone_first_audio_ms(tts_url, text) if tts_url and text else None
    floor = None if lone is None else round(run["first_segment_ms"] + lone, 1)
    overhead = None if floor is None or run["ttfa_ms"] is None else round(run["ttfa_ms"] - floor, 1)
    run.update(lone_ttfa_ms=lone, floor_ms=floor, overhead_ms=overhead)


def _line(level: str, case: str, run: dict[str, Any]) -> str:
    def ms(key: str) -> str:
        return "-" if run[key] is None else f"{run[key]:.0f}"

    return (
        f"{level:9} {case:12} run {run['run']} {run['mode']:6} ttft {ms('ttft_ms')} "
        f"ttfa {ms('ttfa_ms')} total {ms('total_ms')} overhead {ms('overhead_ms')} ms, "
        f"{run['segments']} segments, {run['underruns']} underruns"
    )


async def compare(
    target: Target, level: str, case: tuple[int | None, int], plan: Plan, tts_url: str | None
) -> dict[str, Any]:
    """``case`` = (sentences, runs): that many stream and batch runs, ABBA, after warm-ups."""
    sentences, count = case
    name = f"{sentences} sentences" if sentences else "agent's reply"
    demo = plan.demo(sentences) if sentences else None
    conversation = f"bench-{level}-{sentences}"
    for _ in range(plan.warmup):
        for mode in TURN_MODES:
            await target.turn(mode, conversation, _warm(demo))
    runs: list[dict[str, Any]] = []
    records: dict[str, list[list[Timed]]] = {mode: [] for mode in TURN_MODES}
    for index in range(count):
        for mode in TURN_MODES if index % 2 == 0 else TURN_MODES[::-1]:
            events = await target.turn(mode, conversation, demo)
            run = {"run": index + 1, "mode": mode, **figures(events)}
            await _add_floor(run, tts_url)
            runs.append(run)
            records[mode].append(events)
            print(_line(level, name, run), flush=True)
    summary = summarize(runs)
    return {
        "case": name,
        "sentences": sentences,
        "first_segment": runs[0]["segment_detail"][0]["text"] if runs[0]["segments"] else None,
        "runs": runs,
        "summary": summary,
        "ttfa_batch_over_stream": ratio(summary, "ttfa_ms"),
        "total_batch_over_stream": ratio(summary, "total_ms"),
        "timeline": {mode: timeline(_median_ttfa(records[mode])) for mode in TURN_MODES},
    }


def _warm(demo: DemoConfig | None) -> DemoConfig | None:
    """The warm-up reply where the target runs the demo model: one sentence, at once."""
    if demo is None:
        return None
    return dataclasses.replace(demo, sentences=1, tokens_per_second=1000.0, first_token_delay_s=0)


def _median_ttfa(records: list[list[Timed]]) -> list[Timed]:
    """The record whose time to first audio is the median (the lower one of an even count)."""
    ranked = sorted(records, key=lambda events: figures(events)["ttfa_ms"] or math.inf)
    return ranked[(len(ranked) - 1) // 2]


async def legs(sse: HttpTarget, websocket: WebSocketTarget, plan: Plan) -> dict[str, Any]:
    """The browser leg: the same stream turn over SSE and over the WebSocket, alternating ABBA.

    Per turn: first audio, total, and the bytes received (the SSE body; the WebSocket frames'
    payloads), also per second of audio.
    """
    demo = plan.demo(plan.leg_sentences)
    targets = {"sse": sse, "websocket": websocket}
    for leg, target in targets.items():  # opens each leg's conversation and its TTS session
        await target.turn_on_wire("stream", f"bench-leg-{leg}", _warm(demo))
    runs = []
    for index in range(plan.leg_runs):
        for leg in LEGS if index % 2 == 0 else LEGS[::-1]:
            events, wire = await targets[leg].turn_on_wire("stream", f"bench-leg-{leg}", demo)
            run = figures(events)
            audio_s = run["audio_ms"] / 1000
            runs.append(
                {
                    "run": index + 1,
                    "leg": leg,
                    **{k: run[k] for k in ("ttfa_ms", "total_ms", "audio_ms", "errors")},
                    "wire_bytes": wire,
                    "bytes_per_audio_s": round(wire / audio_s) if audio_s else None,
                }
            )
            print(
                f"leg {leg:9} run {index + 1} ttfa {run['ttfa_ms']:.0f} total "
                f"{run['total_ms']:.0f} ms, {wire} bytes, "
                f"{runs[-1]['bytes_per_audio_s']} bytes per audio s",
                flush=True,
            )
    summary = {
        leg: {m: spread([r[m] for r in runs if r["leg"] == leg]) for m in LEG_METRICS}
        for leg in LEGS
    }
    return {"sentences": plan.leg_sentences, "runs": runs, "summary": summary}


async def concurrency(target: Target, plan: Plan, local: bool) -> list[dict[str, Any]]:
    """For each level, that many turns at once in separate conversations (stream mode)."""
    conversations = [f"bench-concurrent-{i}" for i in range(max(plan.concurrency))]
    demo = plan.demo(plan.concurrency_sentences) if local else None
    for conversation in conversations:  # opens each conversation's TTS session
        await target.turn("stream", conversation, _warm(demo))
    results = []
    for level in plan.concurrency:
        started = time.perf_counter()
        records = await asyncio.gather(
            *(target.turn("stream", c, demo) for c in conversations[:level])
        )
        wall_s = time.perf_counter() - started
        runs = [figures(events) for events in records]
        ttfa = [run["ttfa_ms"] for run in runs]
        result = {
            "turns": level,
            "wall_s": round(wall_s, 2),
            "ttfa_ms": ttfa,
            "total_ms": [run["total_ms"] for run in runs],
            "ttfa_p50": percentile(ttfa, 50),
            "ttfa_p95": percentile(ttfa, 95),
            "total_p50": percentile([run["total_ms"] for run in runs], 50),
            "turns_per_s": round(level / wall_s, 3),
            "audio_s_per_s": round(sum(run["audio_ms"] for run in runs) / 1000 / wall_s, 2),
            "underruns": sum(run["underruns"] for run in runs),
            "underrun_ms": round(sum(run["underrun_ms"] for run in runs), 1),
            "errors": sorted({code for run in runs for code in run["errors"]}),
        }
        results.append(result)
        print(
            f"concurrent {level}: ttfa p50 {result['ttfa_p50']} p95 {result['ttfa_p95']} ms, "
            f"{result['turns_per_s']} turns/s, {result['audio_s_per_s']} s audio/s",
            flush=True,
        )
    return results


async def transport(tts_url: str, runs: int) -> dict[str, Any]:
    """The TTS transport alone, in ``bench.latency.tts_transport_bench``'s modes as they are."""
    samples: dict[str, list[dict[str, float]]] = {mode: [] for mode in transport_bench.MODES}
    async with TTSSession(WebSocketTransport(tts_url), transport_bench.CONFIG) as session:
        await (await session.speak("Warming up.")).read()
        for _ in range(runs):
            for mode in transport_bench.MODES:
                samples[mode].append(await transport_bench.RUNNERS[mode](session, tts_url))
    summary = {
        mode: {key: spread([t[key] for t in timings]) for key in ("first_audio_ms", "total_ms")}
        for mode, timings in samples.items()
    }
    print(f"transport: {json.dumps(summary)}", flush=True)
    return {"sentences": list(transport_bench.SENTENCES), "runs": samples, "summary": summary}


async def measure(stack: Stack, plan: Plan) -> dict[str, Any]:
    """Every level of the plan on ``stack``; the report without the machine description."""
    levels: dict[str, Any] = {}
    if stack.tts_url:
        levels["transport"] = await transport(stack.tts_url, plan.transport_runs)
        pool = SessionPool(WebSocketTransport(stack.tts_url))
        try:
            await pool.prewarm()
            target = InProcessTarget(pool)
            levels["inprocess"] = [
                await compare(target, "inprocess", case, plan, stack.tts_url)
                for case in plan.inprocess_cases
            ]
        finally:
            await pool.aclose()
    cases: Sequence[tuple[int | None, int]] = plan.http_cases
    if not stack.local_agent:  # the remote agent's own reply, as often as the first case
        cases = [(None, plan.http_cases[0][1])]
    levels[stack.agent_name] = [
        await compare(stack.agent, stack.agent_name, case, plan, stack.tts_url) for case in cases
    ]
    report: dict[str, Any] = {"levels": levels}
    if stack.websocket is not None and isinstance(stack.agent, HttpTarget):
        report["legs"] = await legs(stack.agent, stack.websocket, plan)
    report["concurrency"] = await concurrency(stack.agent, plan, stack.local_agent)
    return report
