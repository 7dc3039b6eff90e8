"""Spoken turns whose reply calls a tool: first audio, the tool's time, the silence the user hears.

    python -m bench.latency.tool_turn [--quick] [--runs N] [--tool-ms MS ...] [--filler-s S]
                                      [--tts-url URL] [--out DIR]

In-process (``Conversations``, ``WebSocketTransport``) against a real TTS server: a running one
(``--tts-url``), else the local one ``voice-agent dev`` starts (the embedded ONNX engine, CPU).
The model is the scripted one of ``agent/testing/tool_model.py``: it says ``BEFORE`` (spoken at
the flush, when the tool call begins), calls the tool, then says ``AFTER`` and the result, at the
demo model's token rate and first-token delay. The tools: ``lookup``, an ``async`` tool that only
waits ``--tool-ms`` (standing for a database or API call, nothing is looked up), and the
example's real ``calculate`` (``examples/clock_and_math_agent.py``). The slowest lookup runs
twice: without and with the filler (``Filler("One moment.", after_s=--filler-s)``).

Per turn (ms from the request, as events arrive in-process): first audio; the tool's start, end
and duration (``tool.end``, and the ``metrics`` event's ``tool_ms``); and the wait the user hears
between the two parts of the reply, from a player that plays each audio chunk at real time once
it has arrived and the one before has ended (``stats.playback``): from the end of the audio
before the tool (its first audio plus its length, if it never ran dry) to the start of the
answer's audio; ``silence_ms`` is the part of that wait in which nothing plays (a filler plays
in the rest). Cases alternate ABBA across runs so that drift hits them alike; medians and p90.
Writes ``tool_turn.{json,md}`` to ``--out`` (``docs/benchmarks``; ``tool_turn_report``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from strands import Agent, tool
from strands.types.tools import AgentTool

from agent.core.conversations import Conversations
from agent.core.factory import VoiceFactory
from agent.core.llm import DemoConfig
from agent.core.tool_calls import Filler
from agent.events import AudioDelta
from agent.requests import TurnRequest
from agent.testing.tool_model import ToolScript, prompt
from bench.latency.agent_latency import _free_port, machine
from bench.latency.stats import audio_record, playback, spread
from bench.latency.tool_turn_report import FIGURES, STEM, headline, write
from examples.clock_and_math_agent import calculate
from tts_client import WebSocketTransport
from tts_protocol import BYTES_PER_SAMPLE, samples_ms
from voice_agent_cli.local_tts import local_tts

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
FILLER = "One moment."
QUERY = "the opening hours of the shop"
EXPRESSION = "12.5 * (3 + 4)"
NEEDED = {"audio.delta", "tool.start", "tool.end", "metrics", "turn.end"}  # in every turn
Timed = tuple[float, dict[str, Any]]  # ms since the request, the event (audio: its size)


class TurnFailed(RuntimeError):
    """A measured turn did not call its tool and speak before and after it."""


@dataclasses.dataclass(frozen=True, slots=True)
class Case:
    """One kind of turn: the tool it calls (``lookup`` waits ``tool_ms``) and the filler."""

    name: str
    tool: str
    tool_ms: float | None = None
    filler_s: float | None = None

    @property
    def prompt(self) -> str:
        if self.tool == "calculate":
            return prompt("calculate", expression=EXPRESSION)
        return prompt("lookup", query=QUERY)

    def tools(self) -> list[AgentTool]:
        return [calculate] if self.tool == "calculate" else [lookup_tool(self.tool_ms or 0.0)]


def cases(tool_ms: Sequence[float], filler_s: float) -> list[Case]:
    """A lookup per latency, the slowest again with the filler, and ``calculate``."""
    if not tool_ms or min(tool_ms) < 0 or filler_s <= 0:
        raise ValueError(
            f"--tool-ms needs latencies >= 0 and --filler-s > 0: {tool_ms}, {filler_s}"
        )
    lookups = [Case(f"lookup {ms:g} ms", "lookup", ms) for ms in sorted(set(tool_ms))]
    slowest = lookups[-1]
    with_filler = dataclasses.replace(slowest, name=f"{slowest.name} + filler", filler_s=filler_s)
    return [*lookups, with_filler, Case("calculate", "calculate")]


def lookup_tool(ms: float) -> AgentTool:
    """A lookup that takes ``ms``: an ``async`` tool that waits, as on a database or an API."""

    @tool(name="lookup")
    async def lookup(query: str) -> str:
        """Look up a record."""
        await asyncio.sleep(ms / 1000)
        return f"the record for {query} is ready"

    return lookup


# --- one turn's figures (pure) --------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Chunk:
    """An audio chunk: when it arrived (ms), how long it plays (ms), and its part of the reply:
    ``before`` the tool, ``filler`` (said while it ran) or ``answer`` (after it)."""

    at_ms: float
    ms: float
    part: str


def silence(chunks: Sequence[Chunk]) -> dict[str, float]:
    """The wait between the audio before the tool and the answer's, played at real time.

    ``before_end_ms``: where the audio before the tool ends; ``answer_start_ms``: where the
    answer's begins (it waits for its arrival and for what plays before it); ``wait_ms``, the
    time between; ``silence_ms``, the part of it in which nothing plays; ``filler_audio_ms``,
    the filler's length. ``ValueError`` if there is no audio before or after the tool.
    """
    parts = [chunk.part for chunk in chunks]
    if "before" not in parts or "answer" not in parts:
        raise ValueError(f"no audio before or after the tool: {sorted(set(parts))}")
    last = len(parts) - 1 - parts[::-1].index("before")
    first = parts.index("answer")
    plays = playback([(chunk.at_ms, chunk.ms) for chunk in chunks])
    before_end = plays[last][0] + plays[last][1]
    gaps = [plays[i + 1][0] - sum(plays[i]) for i in range(last, first)]
    return {
        "before_end_ms": round(before_end, 1),
        "answer_start_ms": round(plays[first][0], 1),
        "wait_ms": round(plays[first][0] - before_end, 1),
        "silence_ms": round(sum(gaps), 1),
        "filler_audio_ms": round(sum(c.ms for c in chunks if c.part == "filler"), 1),
    }


def chunks(events: Sequence[Timed]) -> list[Chunk]:
    """The turn's audio chunks; a segment's part is where its ``segment`` event came: before
    the first ``tool.start``, before the last ``tool.end`` (a filler), or after."""
    part: dict[int, str] = {}
    phase = "before"
    for _, event in events:
        if event["type"] == "tool.start":
            phase = "filler"
        elif event["type"] == "tool.end":
            phase = "answer"
        elif event["type"] == "segment":
            part[event["seq"]] = phase
    return [
        Chunk(at, samples_ms(event["bytes"] // BYTES_PER_SAMPLE), part[event["seq"]])
        for at, event in events
        if event["type"] == "audio.delta"
    ]


def figures(events: Sequence[Timed]) -> dict[str, Any]:
    """One turn's figures from its timed events; ``TurnFailed`` if it did not call the tool
    and speak around it."""
    first: dict[str, Timed] = {}
    for at, event in events:
        first.setdefault(event["type"], (at, event))
    errors = [e["code"] for _, e in events if e["type"] == "error"]
    if missing := sorted(NEEDED - first.keys()):
        raise TurnFailed(f"the turn had no {', '.join(missing)} (errors: {errors or 'none'})")
    tool_end = first["tool.end"][1]
    metrics = first["metrics"][1]
    audio = chunks(events)
    return {
        "first_audio_ms": first["audio.delta"][0],
        "tool_start_ms": first["tool.start"][0],
        "tool_end_ms": first["tool.end"][0],
        "tool_duration_ms": tool_end["duration_ms"],
        "tool_status": tool_end["status"],
        "tool_ms": metrics["tool_ms"],
        "tool_calls": metrics["tool_calls"],
        "before_audio_ms": round(sum(c.ms for c in audio if c.part == "before"), 1),
        "answer_arrival_ms": next(c.at_ms for c in audio if c.part == "answer"),
        **silence(audio),
        "total_ms": first["turn.end"][0],
        "segments": [e["text"] for _, e in events if e["type"] == "segment"],
        "errors": errors,
    }


# --- measuring --------------------------------------------------------------------------------


async def timed_turn(conversations: Conversations, key: str, text: str) -> list[Timed]:
    """One turn's events, each with its ms since the request."""
    conversation = conversations.get(key)  # the agent is built before the clock starts
    received = time.perf_counter()
    turn = await conversation.start_turn(TurnRequest(prompt=text), received)
    timed: list[Timed] = []
    async for event in turn.run():
        at = round((time.perf_counter() - received) * 1000, 1)
        if isinstance(event, AudioDelta):  # its size, not its base64
            timed.append((at, audio_record(event.seq, len(event.pcm))))
        else:
            timed.append((at, event.to_dict()))
    return timed


def factory(case: Case, timing: DemoConfig) -> Callable[[], Agent]:
    def create_agent() -> Agent:
        model = ToolScript(timing.tokens_per_second, timing.first_token_delay_s)
        return Agent(model=model, tools=case.tools(), callback_handler=None)

    return create_agent


async def measure(
    tts_url: str, chosen: Sequence[Case], runs: int, warmup: int, timing: DemoConfig
) -> dict[str, list[dict[str, Any]]]:
    """Every case ``runs`` times, ABBA, after ``warmup`` unreported turns each."""
    opened = {
        case.name: Conversations(
            VoiceFactory.check(factory(case, timing)),
            WebSocketTransport(tts_url),
            filler=None if case.filler_s is None else Filler(FILLER, case.filler_s),
        )
        for case in chosen
    }
    measured: dict[str, list[dict[str, Any]]] = {case.name: [] for case in chosen}
    try:
        for conversations in opened.values():
            await conversations.preconnect()
        for case in chosen:
            for i in range(warmup):
                figures(await timed_turn(opened[case.name], f"warmup-{i}", case.prompt))
        for run in range(runs):
            for case in chosen if run % 2 == 0 else chosen[::-1]:
                events = await timed_turn(opened[case.name], f"run-{run}", case.prompt)
                measured[case.name].append({"run": run, **figures(events)})
    finally:
        for conversations in opened.values():
            await conversations.aclose()
    return measured


def summarize(measured: dict[str, list[dict[str, Any]]], chosen: Sequence[Case]) -> dict[str, Any]:
    """Median and p90 per case and figure, and the ratios the report quotes."""
    summary = {
        name: {figure: spread([run[figure] for run in runs]) for figure in FIGURES}
        for name, runs in measured.items()
    }

    def median(case: Case, figure: str) -> float:
        return summary[case.name][figure]["median"] or 0.0

    on = next(case for case in chosen if case.filler_s is not None)
    same = (on.tool, on.tool_ms, None)
    off = next(case for case in chosen if (case.tool, case.tool_ms, case.filler_s) == same)
    return {
        "summary": summary,
        "silence_over_tool": {  # how much of a lookup's time the user hears as silence
            case.name: round(median(case, "silence_ms") / median(case, "tool_ms"), 2)
            for case in chosen
            if case.tool == "lookup" and case.filler_s is None and case.tool_ms
        },
        "filler": {
            "silence_off_ms": median(off, "silence_ms"),
            "silence_on_ms": median(on, "silence_ms"),
            "filled_ms": round(median(off, "silence_ms") - median(on, "silence_ms"), 1),
            "answer_later_ms": round(
                median(on, "answer_start_ms") - median(off, "answer_start_ms"), 1
            ),
        },
    }


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The flags, checked."""
    timing = DemoConfig()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run per case: a smoke run")
    parser.add_argument("--runs", type=int, help="runs per case (default 8; --quick: 1)")
    parser.add_argument("--warmup", type=int, default=1, help="unreported turns per case (1)")
    parser.add_argument(
        "--tool-ms", type=float, nargs="+", default=[0.0, 500.0, 2000.0], help="lookup latencies"
    )
    parser.add_argument("--filler-s", type=float, default=1.0, help="filler after (slowest lookup)")
    parser.add_argument("--tokens-per-second", type=float, default=timing.tokens_per_second)
    parser.add_argument("--first-token-ms", type=float, default=timing.first_token_delay_s * 1000)
    parser.add_argument("--tts-url", help="a running TTS server (default: start one, as `dev`)")
    parser.add_argument("--out", type=Path, default=OUT, help="where tool_turn.* go")
    args = parser.parse_args(argv)
    args.runs = args.runs if args.runs is not None else (1 if args.quick else 8)
    if args.runs < 1 or args.warmup < 0:
        parser.error(f"--runs must be >= 1 and --warmup >= 0, not {args.runs}, {args.warmup}")
    try:
        args.cases = cases(args.tool_ms, args.filler_s)
        delay_s = args.first_token_ms / 1000
        args.timing = DemoConfig(
            tokens_per_second=args.tokens_per_second, first_token_delay_s=delay_s
        )
        ToolScript(args.tokens_per_second, delay_s)  # the model's own check of its timing
    except ValueError as exc:
        parser.error(str(exc))
    return args


def main(argv: list[str] | None = None) -> int:
    """Measure every case and write the report."""
    args = parse(argv)
    host = machine()
    print(f"tool_turn: load average {host['load_average']} (figures under load are noisy)")
    with contextlib.ExitStack() as stack:
        tts_url, tts = args.tts_url, f"{args.tts_url} (running)"
        if not tts_url:
            tts_url = stack.enter_context(local_tts("127.0.0.1", _free_port(), "warning"))
            tts = "local child process (`python -m tts_server`: embedded ONNX model, CPU)"
        measured = asyncio.run(measure(tts_url, args.cases, args.runs, args.warmup, args.timing))
    report = {
        "benchmark": STEM,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": host | {"load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "setup": {
            "quick": args.quick,
            "runs": args.runs,
            "warmup": args.warmup,
            "tts": tts,
            "tokens_per_second": args.timing.tokens_per_second,
            "first_token_ms": args.first_token_ms,
            "lookup_ms": sorted(set(args.tool_ms)),
            "filler": FILLER,
            "filler_after_s": args.filler_s,
            "query": QUERY,
            "expression": EXPRESSION,
        },
        **summarize(measured, args.cases),
        "runs": measured,
    }
    print(f"tool_turn: load average at the end {report['machine']['load_average_at_end']}")
    for path in write(report, args.out):
        print(f"wrote {path}")
    print("\n".join(headline(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
