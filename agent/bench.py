"""``voice-agent bench``: first audio vs. completion, stream vs. batch, overhead over the floor.

    voice-agent bench                   # the local stack; writes docs/benchmarks/agent_latency.*
    voice-agent bench --quick --out DIR # a short smoke run
    voice-agent bench --tts-url ws://127.0.0.1:8080/invocations-bidirectional-stream
    voice-agent bench --agent-url http://127.0.0.1:8000 --tts-url ws://...   # a running agent
    voice-agent bench --agent-arn arn:aws:bedrock-agentcore:REGION:ACCOUNT:runtime/ID

The demo model streams a fixed reply of a fixed prompt at a fixed token rate. Per run and as
median/p90: time to first text, to first audio, to completion, audio duration, segments,
playback underruns, and the overhead over the floor. The floor of a turn is the moment its first
segment's text was complete (its ``segment`` event) plus the time to first audio of that text
spoken alone on the same TTS server, measured right after the turn. Levels, each measured in the
same run: the TTS transport alone (``bench/tts_transport_bench.py``), the agent in-process
(``Turn.run``), over HTTP SSE (the dev server, or ``--agent-url``/``--agent-arn``), and 1..8
concurrent conversations. Stream and batch runs alternate (ABBA) so that drift hits both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import importlib.util
import itertools
import json
import math
import os
import platform
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from agent.events import samples_ms
from agent.pipeline import MODES, Mode, Turn, TurnRequest
from tts_client import TTSSession, WebSocketTransport
from tts_protocol import BYTES_PER_SAMPLE

if TYPE_CHECKING:
    from agent.llm import DemoConfig
    from agent.service import VoiceAgent

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "benchmarks"
STEM = "agent_latency"
PROMPT = "Tell me about streaming speech"
SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
METRICS = (
    "ttft_ms",
    "ttfa_ms",
    "total_ms",
    "audio_ms",
    "segments",
    "floor_ms",
    "overhead_ms",
    "underruns",
    "underrun_ms",
)
BARRIER_TEXT = "Done."
SSE_READ_BYTES = 256  # AgentCore body reads: a text event is stamped at most this late
MAX_CONCURRENT = 64  # AgentCore turns at once (threads, HTTP connections)

Event = dict[str, Any]
Timed = tuple[float, Event]  # ms since the request; audio.delta carries "bytes", not "audio"


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    """What to run; the defaults take about six minutes on a 2-core CPU box."""

    http_cases: tuple[tuple[int, int], ...] = ((4, 5), (10, 3))  # (sentences, runs per mode)
    inprocess_cases: tuple[tuple[int, int], ...] = ((4, 5),)
    warmup: int = 1  # per mode and case, with a one-sentence reply: opens and warms the session
    transport_runs: int = 3
    tokens_per_second: float = 40.0
    first_token_delay_s: float = 0.3
    concurrency: tuple[int, ...] = (1, 2, 4, 8)
    concurrency_sentences: int = 4

    def demo(self, sentences: int) -> DemoConfig:
        """The demo model's reply of ``sentences`` at this plan's token rate."""
        from agent.llm import DemoConfig

        return DemoConfig(sentences, self.tokens_per_second, self.first_token_delay_s)

    def with_runs(self, runs: int) -> Plan:
        """Every case and the transport level ``runs`` times."""
        return dataclasses.replace(
            self,
            http_cases=tuple((n, runs) for n, _ in self.http_cases),
            inprocess_cases=tuple((n, runs) for n, _ in self.inprocess_cases),
            transport_runs=runs,
        )


QUICK = Plan(
    http_cases=((2, 1),),
    inprocess_cases=((2, 1),),
    transport_runs=1,
    warmup=0,
    tokens_per_second=200.0,
    first_token_delay_s=0.1,
    concurrency=(1, 2),
    concurrency_sentences=2,
)


# --- figures of one turn -------------------------------------------------------------------


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def compact(event: Event) -> Event:
    """``event`` as kept in memory: an ``audio.delta`` keeps its PCM byte count, not its data."""
    if event.get("type") != "audio.delta":
        return event
    audio: str = event["audio"]
    size = len(audio) * 3 // 4 - audio[-2:].count("=")
    return {"type": "audio.delta", "seq": event["seq"], "bytes": size}


def playback(arrivals: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """(start, duration) ms of each chunk for a player that starts at the first arrival.

    It plays each chunk once it has arrived and the previous one has finished, with no
    buffer ahead: a chunk that arrives after the previous one finished is an underrun.
    """
    plays: list[tuple[float, float]] = []
    clock: float | None = None
    for arrived, duration in arrivals:
        start = arrived if clock is None else max(clock, arrived)
        plays.append((start, duration))
        clock = start + duration
    return plays


def underruns(plays: Sequence[tuple[float, float]]) -> tuple[int, float]:
    """How many times playback stalled, and for how long in all (ms)."""
    gaps = [b[0] - (a[0] + a[1]) for a, b in itertools.pairwise(plays)]
    stalls = [gap for gap in gaps if gap > 0]
    return len(stalls), round(sum(stalls), 1)


def _audio(events: Sequence[Timed]) -> list[tuple[float, float]]:
    return [
        (t, samples_ms(e["bytes"] // BYTES_PER_SAMPLE))
        for t, e in events
        if e["type"] == "audio.delta"
    ]


def figures(events: Sequence[Timed]) -> dict[str, Any]:
    """The figures of one turn from its timed events (client-side times)."""
    first: dict[str, float] = {}
    segments: dict[int, dict[str, Any]] = {}
    for t, event in events:
        kind = event["type"]
        first.setdefault(kind, t)
        if kind == "segment":
            segments[event["seq"]] = {
                "seq": event["seq"],
                "text": event["text"],
                "sent_ms": t,
                "first_audio_ms": None,
                "end_ms": None,
                "audio_ms": None,
            }
        elif kind == "audio.delta" and segments[event["seq"]]["first_audio_ms"] is None:
            segments[event["seq"]]["first_audio_ms"] = t
        elif kind == "segment.end":
            segments[event["seq"]].update(end_ms=t, audio_ms=event["audio_ms"])
    audio = _audio(events)
    stalls, stalled_ms = underruns(playback(audio))
    server = next((e for _, e in events if e["type"] == "metrics"), {})
    return {
        "ttft_ms": first.get("text.delta"),
        "ttfa_ms": first.get("audio.delta"),
        "total_ms": first.get("turn.end", events[-1][0] if events else None),
        "audio_ms": round(sum(duration for _, duration in audio), 1),
        "segments": len(segments),
        "first_segment_ms": first.get("segment"),
        "underruns": stalls,
        "underrun_ms": stalled_ms,
        "errors": [e["code"] for _, e in events if e["type"] == "error"],
        "server": {k: server.get(k) for k in ("ttft_ms", "ttfa_ms", "total_ms")},
        "segment_detail": list(segments.values()),
    }


def bursts(arrivals: Sequence[tuple[float, float]], gap_ms: float = 5.0) -> list[list[float]]:
    """Audio chunks that arrived less than ``gap_ms`` apart as one: [first arrival, ms]."""
    merged: list[list[float]] = []  # [first arrival, duration, last arrival]
    for arrived, duration in arrivals:
        if merged and arrived - merged[-1][2] <= gap_ms:
            merged[-1][1:] = [merged[-1][1] + duration, arrived]
        else:
            merged.append([arrived, duration, arrived])
    return [[first, round(duration, 1)] for first, duration, _ in merged]


def timeline(events: Sequence[Timed]) -> dict[str, Any]:
    """One turn for the plot: text deltas, segment sends and audio bursts (one per piece)."""
    return {
        "text_ms": [t for t, e in events if e["type"] == "text.delta"],
        "segments": [[t, e["seq"]] for t, e in events if e["type"] == "segment"],
        "audio": bursts(_audio(events)),
        "end_ms": events[-1][0] if events else 0.0,
    }


def percentile(values: Sequence[float | None], q: float) -> float | None:
    """The ``q``-th percentile, interpolated between closest ranks; None without values."""
    ordered = sorted(v for v in values if v is not None)
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (position - low), 1)


def spread(values: Sequence[float | None]) -> dict[str, float | None]:
    """Median and p90."""
    return {"median": percentile(values, 50), "p90": percentile(values, 90)}


def summarize(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, float | None]]]:
    """Median and p90 of every metric, per mode."""
    by_mode: dict[str, dict[str, dict[str, float | None]]] = {}
    for mode in MODES:
        chosen = [run for run in runs if run["mode"] == mode]
        if chosen:
            by_mode[mode] = {m: spread([run[m] for run in chosen]) for m in METRICS}
    return by_mode


def ratio(summary: dict[str, dict[str, dict[str, float | None]]], metric: str) -> float | None:
    """Batch median over stream median of ``metric`` (how many times sooner streaming is)."""
    try:
        batch, stream = summary["batch"][metric]["median"], summary["stream"][metric]["median"]
    except KeyError:
        return None
    return round(batch / stream, 2) if batch and stream else None


# --- targets: where a turn runs ------------------------------------------------------------


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


# --- measurements --------------------------------------------------------------------------


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
        for mode in MODES:
            await target.turn(mode, conversation, _warm(demo))
    runs: list[dict[str, Any]] = []
    records: dict[str, list[list[Timed]]] = {mode: [] for mode in MODES}
    for index in range(count):
        for mode in MODES if index % 2 == 0 else MODES[::-1]:
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
        "timeline": {mode: timeline(_median_ttfa(records[mode])) for mode in MODES},
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


def transport_bench() -> ModuleType:
    """``bench/tts_transport_bench.py`` of this checkout (its modes are reused as they are)."""
    path = ROOT / "bench" / "tts_transport_bench.py"
    spec = importlib.util.spec_from_file_location("tts_transport_bench", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run the bench from a source checkout")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def transport(tts_url: str, runs: int) -> dict[str, Any]:
    """The TTS transport alone: 4 sentences pipelined, sequential, or reconnecting each."""
    tb = transport_bench()
    samples: dict[str, list[dict[str, float]]] = {mode: [] for mode in tb.MODES}
    async with TTSSession(WebSocketTransport(tts_url), tb.CONFIG) as session:
        await (await session.speak("Warming up.")).read()
        for _ in range(runs):
            for mode in tb.MODES:
                samples[mode].append(await tb.RUNNERS[mode](session, tts_url))
    summary = {
        mode: {key: spread([t[key] for t in timings]) for key in ("first_audio_ms", "total_ms")}
        for mode, timings in samples.items()
    }
    print(f"transport: {json.dumps(summary)}", flush=True)
    return {"sentences": list(tb.SENTENCES), "runs": samples, "summary": summary}


@dataclasses.dataclass(frozen=True, slots=True)
class Stack:
    """Where the measured parts run."""

    tts_url: str | None  # None: no TTS access (a remote agent): no floor, transport, in-process
    agent: Target
    agent_name: str  # "http" (the local dev server) or "remote"
    local_agent: bool  # the demo model's reply can be set


async def measure(stack: Stack, plan: Plan) -> dict[str, Any]:
    """Every level of the plan on ``stack``; the report without the machine description."""
    levels: dict[str, Any] = {}
    if stack.tts_url:
        levels["transport"] = await transport(stack.tts_url, plan.transport_runs)
        async with TTSSession(WebSocketTransport(stack.tts_url)) as session:
            target = InProcessTarget(session)
            levels["inprocess"] = [
                await compare(target, "inprocess", case, plan, stack.tts_url)
                for case in plan.inprocess_cases
            ]
    cases: Sequence[tuple[int | None, int]] = plan.http_cases
    if not stack.local_agent:  # the remote agent's own reply, as often as the first case
        cases = [(None, plan.http_cases[0][1])]
    levels[stack.agent_name] = [
        await compare(stack.agent, stack.agent_name, case, plan, stack.tts_url) for case in cases
    ]
    return {
        "levels": levels,
        "concurrency": await concurrency(stack.agent, plan, stack.local_agent),
    }


# --- the local stack -----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def dev_server(tts_url: str) -> Iterator[tuple[str, VoiceAgent]]:
    """The dev server with the demo model, in a thread on a free port."""
    import uvicorn

    from agent.config import AgentConfig
    from agent.devserver import create_app

    app = create_app(AgentConfig(model="demo", tts_url=tts_url))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="bench-devserver", daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the dev server did not start")
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}", app.state.voice_agent
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def machine() -> dict[str, Any]:
    """The machine and the versions that matter to the figures."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model n")), "")
    packages = ("onnxruntime", "strands-agents", "websockets", "uvicorn", "fastapi", "httpx")
    versions = {}
    for name in packages:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return {
        "cpu": cpu or platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "packages": versions,
    }


# --- output --------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{round(value, digits) + 0.0:.{digits}f}"  # never "-0"


def _cell(summary: dict[str, dict[str, float | None]], metric: str, digits: int = 0) -> str:
    return f"{_fmt(summary[metric]['median'], digits)} / {_fmt(summary[metric]['p90'], digits)}"


def headline(report: dict[str, Any]) -> list[str]:
    """The sentences that matter, from the first case of the HTTP (or remote) level."""
    level = next(name for name in ("http", "remote", "inprocess") if name in report["levels"])
    case = report["levels"][level][0]
    stream, batch = case["summary"]["stream"], case["summary"]["batch"]
    return [
        f"- **{level}, {case['case']}**: first audio after **{_fmt(stream['ttfa_ms']['median'])}"
        f" ms** streaming vs {_fmt(batch['ttfa_ms']['median'])} ms batch: "
        f"**{_fmt(case['ttfa_batch_over_stream'], 2)}x sooner**; completion "
        f"{_fmt(stream['total_ms']['median'])} vs {_fmt(batch['total_ms']['median'])} ms "
        f"({_fmt(case['total_batch_over_stream'], 2)}x).",
        f"- Pipeline overhead over the floor (stream): median "
        f"**{_fmt(stream['overhead_ms']['median'])} ms**, p90 {_fmt(stream['overhead_ms']['p90'])}"
        f" ms, on a floor of {_fmt(stream['floor_ms']['median'])} ms.",
        f"- Playback underruns (stream, median per turn): {_fmt(stream['underruns']['median'])},"
        f" {_fmt(stream['underrun_ms']['median'])} ms in all.",
    ]


def markdown(report: dict[str, Any]) -> str:
    """The Markdown report."""
    setup, m = report["setup"], report["machine"]
    runs = ", ".join(
        f"{case['runs'][-1]['run']} ({level}, {case['case']})"
        for level, cases in report["levels"].items()
        if level != "transport"
        for case in cases
    )
    lines = [
        "# Agent latency: first audio vs. completion, stream vs. batch",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['platform']}; Python {m['python']}; "
        f"load average at start {m['load_average'][0]}. {report['date']}. Written by "
        f"`voice-agent bench{' --quick' if setup['quick'] else ''}` (`agent/bench.py`); "
        f"every raw figure is in `{STEM}.json`, plotted in `{STEM}.png`.",
        "",
        f"Setup: prompt {setup['prompt']!r}; the demo model (a fixed reply, "
        f"{setup['tokens_per_second']:g} tokens/s, first token after "
        f"{setup['first_token_delay_s'] * 1000:g} ms); TTS: {setup['tts']}; agent: "
        f"{setup['agent']}. Runs per mode: {runs}, stream and batch alternating (ABBA), after "
        f"{setup['warmup']} warm-up turn per mode with a one-sentence reply. Times are ms from "
        "sending the request to the event's arrival at the client.",
        "",
        "## Headline",
        "",
        *headline(report),
        "",
        "## Stream vs. batch (median / p90)",
        "",
        "| level | reply | mode | first text | first audio | total | audio | segments | floor | "
        "overhead | underruns | underrun ms |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    agent_levels = [name for name in report["levels"] if name != "transport"]
    for level in agent_levels:
        for case in report["levels"][level]:
            for mode, s in case["summary"].items():
                cells = [_cell(s, metric) for metric in METRICS]
                lines.append(f"| {level} | {case['case']} | {mode} | {' | '.join(cells)} |")
    lines += [
        "",
        "| level | reply | first audio: batch / stream | total: batch / stream |",
        "|---|---|---:|---:|",
    ]
    for level in agent_levels:
        for case in report["levels"][level]:
            lines.append(
                f"| {level} | {case['case']} | {_fmt(case['ttfa_batch_over_stream'], 2)}x | "
                f"{_fmt(case['total_batch_over_stream'], 2)}x |"
            )
    if "transport" in report["levels"]:
        t = report["levels"]["transport"]
        lines += [
            "",
            "## TTS transport alone (4 sentences on one connection, median / p90)",
            "",
            f"`bench/tts_transport_bench.py`'s modes on the same server: {len(t['sentences'])} "
            "short sentences, pipelined on one warm session, one at a time on it, or a new "
            "connection per sentence.",
            "",
            "| mode | first audio | total |",
            "|---|---:|---:|",
        ]
        for mode, s in t["summary"].items():
            lines.append(f"| {mode} | {_cell(s, 'first_audio_ms')} | {_cell(s, 'total_ms')} |")
    lines += [
        "",
        f"## Concurrent conversations ({setup['concurrency_sentences']} sentences, stream)",
        "",
        "Each level starts that many turns at once, one per conversation (its own session "
        "header, its own TTS connection). The TTS server synthesizes on one engine thread. "
        "Underruns are summed over the turns.",
        "",
        "| turns | first audio p50 | p95 | total p50 | wall (s) | turns/s | audio s per s | "
        "underruns | underrun ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in report["concurrency"]:
        lines.append(
            f"| {c['turns']} | {_fmt(c['ttfa_p50'])} | {_fmt(c['ttfa_p95'])} | "
            f"{_fmt(c['total_p50'])} | {c['wall_s']} | {c['turns_per_s']} | "
            f"{c['audio_s_per_s']} | {c['underruns']} | {_fmt(c['underrun_ms'])} |"
        )
    lines += [
        "",
        "## Per run",
        "",
        "| level | reply | run | mode | first text | first segment | lone first audio | floor | "
        "first audio | overhead | total | audio | underruns |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for level in agent_levels:
        for case in report["levels"][level]:
            for r in case["runs"]:
                row = " | ".join(_fmt(r[k]) for k in PER_RUN)
                lines.append(
                    f"| {level} | {case['case']} | {r['run']} | {r['mode']} | {row} | "
                    f"{r['underruns']} |"
                )
    lines += ["", *DEFINITIONS]
    return "\n".join(lines) + "\n"


PER_RUN = (
    "ttft_ms",
    "first_segment_ms",
    "lone_ttfa_ms",
    "floor_ms",
    "ttfa_ms",
    "overhead_ms",
    "total_ms",
    "audio_ms",
)
DEFINITIONS = (
    "## Definitions",
    "",
    "- **first text / first audio / total**: from sending the request to the first "
    "`text.delta`, the first `audio.delta` and `turn.end`, as the client receives them.",
    "- **floor**: the arrival of the first `segment` event (its text is complete) plus the time "
    "to first audio of that same text spoken alone on a fresh connection to the same TTS server, "
    "measured right after the turn. In batch mode the first segment is the whole reply. "
    "**overhead** = first audio - floor: what the pipeline adds (the agent's queues, base64, "
    "SSE, the second hop) over the unavoidable LLM and synthesis time.",
    "- **underruns**: a simulated player starts at the first audio and plays each chunk as "
    "soon as it has it; every time a chunk arrives after the previous one finished playing, "
    "playback stalls (count, and total stalled ms).",
    "- **levels**: `transport` is the TTS client and server alone; `inprocess` runs "
    "`Turn.run` in the benchmark's process; `http` is the dev server (FastAPI, sse-starlette) "
    "on loopback, read with httpx; `remote` is `--agent-url` or `--agent-arn`.",
    "- p90 and p95 interpolate between the closest ranks; with 5 runs p90 lies between the "
    "two slowest.",
)


def plot(report: dict[str, Any], path: Path) -> None:
    """Per-run first audio and total, stream vs. batch, and the timeline of one turn each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    level = next(name for name in ("http", "remote", "inprocess") if name in report["levels"])
    cases = report["levels"][level]
    colors = {"stream": "tab:blue", "batch": "tab:orange"}
    fig = plt.figure(figsize=(12, 9), layout="constrained")
    grid = fig.add_gridspec(2, len(cases), height_ratios=(1, 1.2))
    for column, case in enumerate(cases):
        ax = fig.add_subplot(grid[0, column])
        for mode, color in colors.items():
            runs = [r for r in case["runs"] if r["mode"] == mode]
            x = [r["run"] for r in runs]
            ax.plot(x, [r["ttfa_ms"] for r in runs], "o-", color=color, label=f"{mode} first audio")
            ax.plot(x, [r["total_ms"] for r in runs], "s--", color=color, label=f"{mode} total")
        ax.set(title=f"{level}, {case['case']}: per run", xlabel="run", ylabel="ms")
        ax.set_ylim(0, 1.4 * max(r["total_ms"] for r in case["runs"]))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize="small", loc="upper left", ncol=2)
    ax = fig.add_subplot(grid[1, :])
    labels: list[str] = []
    for offset, mode in enumerate(("batch", "stream")):
        line = cases[0]["timeline"][mode]
        base = offset * 5
        ax.plot(line["text_ms"], [base + 3] * len(line["text_ms"]), "|", color="gray", ms=10)
        for t, seq in line["segments"]:
            ax.plot(t, base + 2, "v", color=colors[mode], ms=8)
            ax.annotate(str(seq), (t, base + 2.25), ha="center", fontsize="small")
        arrivals = [t for t, _ in line["audio"]]
        ax.plot(arrivals, [base + 1] * len(arrivals), "|", color=colors[mode], ms=10)
        ax.broken_barh(playback(line["audio"]), (base - 0.3, 0.6), color=colors[mode])
        labels += [f"{mode}: playback", f"{mode}: audio arrives", f"{mode}: segment sent"]
        labels += [f"{mode}: text delta", ""]
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(-1, len(labels) - 1)
    ax.set(title=f"One turn ({level}, {cases[0]['case']}, median first audio)", xlabel="ms")
    ax.grid(axis="x", alpha=0.3)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(report: dict[str, Any], out: Path) -> list[Path]:
    """``agent_latency.{json,md,png}`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{STEM}.{ext}" for ext in ("json", "md", "png")]
    paths[0].write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    paths[1].write_text(markdown(report))
    plot(report, paths[2])
    return paths


# --- command line --------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``voice-agent bench`` flags."""
    parser.add_argument("--quick", action="store_true", help="one short run of every level")
    parser.add_argument("--runs", type=int, help="runs per mode (default 5; 10 sentences: 3)")
    parser.add_argument("--warmup", type=int, help="short unreported turns per mode (default 1)")
    parser.add_argument("--out", type=Path, default=OUT, help="where agent_latency.* go")
    parser.add_argument("--tts-url", help="a running TTS server (default: start one, as `dev`)")
    remote = parser.add_mutually_exclusive_group()
    remote.add_argument("--agent-url", help="a running agent instead of the local dev server")
    remote.add_argument("--agent-arn", help="an AgentCore runtime ARN (boto3, AWS credentials)")
    parser.add_argument("--region", help="for --agent-arn (default: the ARN's)")
    parser.add_argument("--qualifier", default="DEFAULT", help="for --agent-arn")
    parser.add_argument("--tokens-per-second", type=float, help="the demo model's rate (40)")
    parser.add_argument("--first-token-ms", type=float, help="the demo model's delay (300)")
    parser.add_argument("--concurrency", type=int, nargs="+", help="levels (1 2 4 8)")


def plan_from(args: argparse.Namespace) -> Plan:
    """The plan the flags ask for."""
    plan = QUICK if args.quick else Plan()
    if args.runs is not None:
        plan = plan.with_runs(args.runs)
    overrides = {
        "warmup": args.warmup,
        "tokens_per_second": args.tokens_per_second,
        "first_token_delay_s": None if args.first_token_ms is None else args.first_token_ms / 1000,
        "concurrency": None if args.concurrency is None else tuple(args.concurrency),
    }
    return dataclasses.replace(plan, **{k: v for k, v in overrides.items() if v is not None})


def run(args: argparse.Namespace) -> int:
    """Set up the stack, measure, write the report."""
    import matplotlib  # noqa: F401 - fail now, not after minutes of measuring

    from agent.cli import local_tts

    plan = plan_from(args)
    host = machine()
    if (load := host["load_average"][0]) > 1.0:
        print(f"bench: load average {load}: the figures may be noisy", file=sys.stderr)
    with contextlib.ExitStack() as stack:
        tts_url, tts = args.tts_url, f"{args.tts_url} (running)"
        if not tts_url and not (args.agent_url or args.agent_arn):
            tts_url = stack.enter_context(local_tts("127.0.0.1", _free_port(), "warning"))
            tts = "local child process (`python -m tts_server`: embedded ONNX model, CPU)"
        if args.agent_arn:
            agent: Target = AgentCoreTarget(args.agent_arn, args.region, args.qualifier)
            description, name, local = f"AgentCore runtime {args.agent_arn}", "remote", False
        elif args.agent_url:
            agent, description = HttpTarget(args.agent_url), f"{args.agent_url} (running)"
            name, local = "remote", False
        else:
            url, voice_agent = stack.enter_context(dev_server(tts_url))
            agent, description = HttpTarget(url, voice_agent), "dev server in a thread, demo model"
            name, local = "http", True
        setup = {
            "prompt": PROMPT,
            "quick": args.quick,
            "tts": tts if tts_url else "not measured (no --tts-url)",
            "agent": description,
            **dataclasses.asdict(plan),
        }
        results = asyncio.run(_measure_and_close(Stack(tts_url, agent, name, local), plan))
    report = {
        "benchmark": STEM,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": host | {"load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "setup": setup,
        **results,
    }
    for path in write(report, args.out):
        print(f"wrote {path}")
    print("\n".join(headline(report)))
    return 0


async def _measure_and_close(stack: Stack, plan: Plan) -> dict[str, Any]:
    try:
        return await measure(stack, plan)
    finally:
        if isinstance(stack.agent, HttpTarget):
            await stack.agent.aclose()
