"""Load benchmark: N concurrent sessions, each speaking four sentences pipelined.

    python -m bench.load.tts_load_bench                     # onnx on this CPU, server started here
    python -m bench.load.tts_load_bench --engine torch --device cuda --model-dir DIR \\
        --phoneme-table FILE --sessions 1 2 4 8 16 32 64 --max-batch 1 32
    python -m bench.load.tts_load_bench --url ws://host:8080/ws  # a running server, as it is

For every N in ``--sessions``, N sessions connect, then all speak ``SENTENCES`` at the same
moment; per N: first audio p50/p95/p99, total time, aggregate audio-seconds per second, late
sentences against real-time playback, errors and ``busy`` refusals (``bench.load.stats``). When
it starts the server itself, it does so once per ``--max-batch`` value (1 is unbatched), so
batched and unbatched are measured in the same run. Writes
``docs/benchmarks/tts_load_<engine>_<device>.{json,md,png}`` (``bench.load.report``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.load.report import Results, write
from bench.load.server import ping_url, server_flags, tts_server
from bench.load.stats import LevelStats, SentenceTiming, SessionRun
from tts_client import SessionConfig, TTSBusy, TTSError, TTSSession, WebSocketTransport
from tts_client.segment import SegmentStream
from tts_protocol import SAMPLE_RATE

SENTENCES = (
    "Your order has shipped and should arrive at your home by Thursday.",
    "The driver will call you about thirty minutes before the delivery window.",
    "If nobody is at home, the package will be left with a neighbor.",
    "You can change the delivery address at any time in the mobile app.",
)
OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
CONFIG = SessionConfig(connect_timeout=60, reply_timeout=120, reconnect_window=60, close_timeout=2)


async def run_session(
    url: str, go: asyncio.Event, connected: asyncio.Event, config: SessionConfig
) -> SessionRun:
    """Connect, wait for ``go``, speak every sentence at once, read all audio."""
    transport = WebSocketTransport(url, open_timeout=config.connect_timeout)
    try:
        session = await TTSSession.connect(transport, config)
    except TTSBusy:
        connected.set()
        return SessionRun(sentences=(), refused=True)
    except TTSError as exc:
        connected.set()
        return SessionRun(sentences=(), errors=(f"connect: {exc}",))
    connected.set()
    try:
        await go.wait()
        started = time.perf_counter()
        segments = [await session.speak(text) for text in SENTENCES]
        await asyncio.gather(*(segment.wait() for segment in segments))
        return _session_run(segments, started)
    finally:
        await session.aclose(drain=False)


def _session_run(segments: Sequence[SegmentStream], started: float) -> SessionRun:
    timings: list[SentenceTiming] = []
    errors: list[str] = []
    for segment in segments:
        first, end = segment.timings.first_audio, segment.timings.end
        if segment.end is None or first is None or end is None:
            errors.append(f"{segment.status}: {segment.error}")
            break  # playback of this session stops at the first sentence it lacks
        timings.append(
            SentenceTiming(first - started, end - started, segment.end.samples / SAMPLE_RATE)
        )
    return SessionRun(sentences=tuple(timings), errors=tuple(errors))


async def run_level(url: str, sessions: int, config: SessionConfig = CONFIG) -> LevelStats:
    """``sessions`` concurrent sessions, started together; the server's refusals are counted."""
    refused_before = await _server_refusals(url)
    go = asyncio.Event()
    connected = [asyncio.Event() for _ in range(sessions)]
    tasks = [asyncio.create_task(run_session(url, go, ready, config)) for ready in connected]
    await asyncio.gather(*(ready.wait() for ready in connected))
    go.set()
    runs = await asyncio.gather(*tasks)
    refusals = await _server_refusals(url) - refused_before
    return LevelStats.of(runs, server_refusals=refusals)


async def _server_refusals(url: str) -> int:
    """Connections and segments the server refused as busy so far (0 if /ping is not there)."""
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            body = (await client.get(ping_url(url))).json()
        kinds = ("refused_connections", "refused_sessions", "refused_segments")
        return sum(int(body.get(kind, 0)) for kind in kinds)
    except (httpx.HTTPError, ValueError):
        return 0


async def run_levels(url: str, levels: Sequence[int]) -> list[LevelStats]:
    """Every level in turn, after one warm-up sentence; prints each as it is measured."""
    async with TTSSession(WebSocketTransport(url), CONFIG) as session:
        await (await session.speak(SENTENCES[0])).wait()
    results = []
    for sessions in levels:
        stats = await run_level(url, sessions)
        print(
            f"  {sessions:>3} sessions: first audio p50 {stats.first_audio_ms['p50']:.0f} ms, "
            f"p95 {stats.first_audio_ms['p95']:.0f} ms; {stats.audio_s_per_s:.1f} audio-s/s; "
            f"late {stats.late}/{stats.sentences}; errors {stats.errors}; "
            f"refusals {stats.refusals}",
            flush=True,
        )
        results.append(stats)
    return results


def server_args(args: argparse.Namespace) -> list[str]:
    """The flags the benchmark passes to every server it starts (the batch size aside)."""
    flags = ["--engine", args.engine, "--max-sessions", str(max(args.sessions))]
    flags += ["--device", args.device] if args.device else []
    flags += ["--model-dir", str(args.model_dir)] if args.model_dir else []
    flags += ["--phoneme-table", str(args.phoneme_table)] if args.phoneme_table else []
    return flags


def modes(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """The server modes to measure: ``--max-batch`` values, or the one server at ``--url``."""
    if args.url:
        return [(args.mode_name, [])]
    if "--max-batch" not in server_flags():
        print("this tts-server has no --max-batch: measuring it as it is (unbatched)")
        return [("unbatched", [])]
    sizes = args.max_batch if args.engine == "torch" else [1]  # onnx: one piece per model call
    return [
        ("unbatched" if size == 1 else f"batched (max batch {size})", ["--max-batch", str(size)])
        for size in sizes
    ]


def run(args: argparse.Namespace) -> tuple[Results, dict[str, Any]]:
    """Measure every mode; the metadata says on what."""
    results: Results = {}
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    for mode, extra in modes(args):
        print(f"{mode}:", flush=True)
        if args.url:
            results[mode] = asyncio.run(run_levels(args.url, args.sessions))
            continue
        with tts_server([*server_args(args), *extra]) as url:
            results[mode] = asyncio.run(run_levels(url, args.sessions))
    meta = {
        "engine": args.engine,
        "device": args.device or ("cpu" if args.engine == "onnx" else "auto"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "python": platform.python_version(),
        "load_before": round(load_before, 2),
        "server": args.url or " ".join(server_args(args)),
        "sentences": list(SENTENCES),
        "wall_s": round(time.monotonic() - started, 1),
    }
    return results, meta


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The benchmark's flags."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", help="a running server's WebSocket URL (default: start one)")
    parser.add_argument("--mode-name", default="server", help="the label of --url's results")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--max-batch", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--engine", choices=["onnx", "torch"], default="onnx")
    parser.add_argument("--device", choices=["cpu", "cuda"])
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--phoneme-table", type=Path)
    parser.add_argument("--out", type=Path, default=OUT)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Parse flags, measure, write."""
    args = parse(argv)
    results, meta = run(args)
    stem = f"tts_load_{meta['engine']}_{meta['device']}"
    for path in write(results, meta, args.out, stem):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
