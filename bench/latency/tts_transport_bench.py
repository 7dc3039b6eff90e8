"""Transport benchmark: 4 sentences, pipelined vs one at a time vs a new connection each.

    python -m bench.latency.tts_transport_bench                  # starts a local server in-process
    python -m bench.latency.tts_transport_bench --url ws://127.0.0.1:8080/ws --runs 5

Modes, each timed from the first ``speak`` (or connect) to the last sentence's ``end``:
``pipelined`` sends all four at once on one warm session; ``sequential`` waits for each
sentence's ``end`` before the next ``speak`` on the same session; ``reconnect`` opens a new
session (connection plus ``ready``) per sentence. Every latency in ``--latency-ms`` runs the
modes through the SageMaker-style gateway, which adds that one-way delay to every message and
two round trips to every new connection (0 ms: direct). Medians over ``--runs`` runs, the
modes interleaved. Writes ``docs/benchmarks/tts_transport.{md,json}``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

from tts_client import SessionConfig, TTSSession, WebSocketTransport
from tts_client.testing.gateway import Gateway
from tts_protocol import PING_PATH, STREAM_PATH

SENTENCES = (
    "Sure, I can help with that.",
    "Your order shipped this morning.",
    "It should arrive on Thursday.",
    "Is there anything else I can do for you?",
)
MODES = ("pipelined", "sequential", "reconnect")
OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
CONFIG = SessionConfig(close_timeout=1.0)

Timing = dict[str, float]


async def pipelined(session: TTSSession, url: str) -> Timing:
    """All sentences sent at once on one warm session."""
    started = time.perf_counter()
    segments = [await session.speak(text) for text in SENTENCES]
    for segment in segments:
        await segment.read()
    return _timing(started, segments[0].timings.first_audio, time.perf_counter())


async def sequential(session: TTSSession, url: str) -> Timing:
    """One warm session; each ``speak`` waits for the previous sentence's ``end``."""
    started = time.perf_counter()
    first: float | None = None
    for text in SENTENCES:
        segment = await session.speak(text)
        await segment.read()
        first = first or segment.timings.first_audio
    return _timing(started, first, time.perf_counter())


async def reconnect(session: TTSSession, url: str) -> Timing:
    """A new session (connection and ``ready``) for every sentence."""
    started = time.perf_counter()
    first: float | None = None
    for text in SENTENCES:
        async with TTSSession(WebSocketTransport(url), CONFIG) as fresh:
            segment = await fresh.speak(text)
            await segment.read()
        first = first or segment.timings.first_audio
    return _timing(started, first, time.perf_counter())


RUNNERS: dict[str, Callable[[TTSSession, str], Awaitable[Timing]]] = {
    "pipelined": pipelined,
    "sequential": sequential,
    "reconnect": reconnect,
}


def _timing(started: float, first_audio: float | None, ended: float) -> Timing:
    return {
        "first_audio_ms": round(((first_audio or ended) - started) * 1000, 1),
        "total_ms": round((ended - started) * 1000, 1),
    }


@contextlib.asynccontextmanager
async def via_gateway(url: str, latency_ms: float) -> AsyncIterator[str]:
    """``url`` directly for 0 ms, else a gateway adding ``latency_ms`` each way."""
    if not latency_ms:
        yield url
        return
    async with Gateway(url, latency_s=latency_ms / 1000) as gateway:
        yield gateway.url


async def bench(url: str, latencies: list[float], runs: int) -> dict[str, dict[str, Timing]]:
    """Median timings per latency and mode."""
    results: dict[str, dict[str, Timing]] = {}
    for latency in latencies:
        async with via_gateway(url, latency) as target:
            samples: dict[str, list[Timing]] = {mode: [] for mode in MODES}
            async with TTSSession(WebSocketTransport(target), CONFIG) as session:
                await (await session.speak("Warming up.")).read()
                for _ in range(runs):
                    for mode in MODES:
                        samples[mode].append(await RUNNERS[mode](session, target))
        results[f"{latency:g}"] = {mode: _median(samples[mode]) for mode in MODES}
        print(f"latency {latency:g} ms: {json.dumps(results[f'{latency:g}'])}", flush=True)
    return results


def _median(timings: list[Timing]) -> Timing:
    return {key: round(statistics.median(t[key] for t in timings), 1) for key in timings[0]}


@contextlib.contextmanager
def local_server() -> Iterator[str]:
    """The TTS server (embedded ONNX engine) in a thread on a free port, once healthy."""
    import uvicorn

    from tts_server.app import create_app
    from tts_server.settings import Settings

    config = uvicorn.Config(create_app(Settings()), host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        deadline = time.monotonic() + 120
        while not _healthy(f"http://127.0.0.1:{port}{PING_PATH}"):
            if time.monotonic() > deadline:
                raise RuntimeError("the local server never became healthy")
            time.sleep(0.2)
        yield f"ws://127.0.0.1:{port}{STREAM_PATH}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def write(results: dict[str, dict[str, Timing]], runs: int, server: str) -> None:
    """Write the JSON and the Markdown table."""
    meta = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "python": platform.python_version(),
        "server": server,
        "runs": runs,
        "sentences": list(SENTENCES),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "tts_transport.json").write_text(json.dumps({**meta, "results": results}, indent=2))
    lines = [
        "# Transport benchmark: 4 sentences on one connection",
        "",
        f"Machine: {meta['machine']}; Python {meta['python']}; server: {server}.",
        f"Medians of {runs} runs per mode (interleaved). Written by "
        "`bench/latency/tts_transport_bench.py`.",
        "",
        "- **pipelined**: one warm session, all four `speak`s sent at once.",
        "- **sequential**: one warm session, each `speak` after the previous `end`.",
        "- **reconnect**: a new connection (handshake + `ready`) per sentence.",
        "",
        "Latency is one-way, added by the SageMaker-style gateway to every message, plus two",
        "round trips per new connection (TCP and upgrade; TLS and SigV4 are not modeled);",
        "0 ms is loopback without the gateway.",
        "",
        "| latency (ms) | mode | first audio (ms) | total (ms) | total vs pipelined |",
        "|---:|---|---:|---:|---:|",
    ]
    for latency, modes in results.items():
        base = modes["pipelined"]["total_ms"]
        for mode, timing in modes.items():
            lines.append(
                f"| {latency} | {mode} | {timing['first_audio_ms']:.1f} | "
                f"{timing['total_ms']:.1f} | {timing['total_ms'] / base:.2f}x |"
            )
    (OUT / "tts_transport.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'tts_transport.md'} and .json")


def main() -> None:
    """Parse flags, run, write."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server's WebSocket URL (default: start one)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 40.0])
    args = parser.parse_args()
    if args.url:
        results = asyncio.run(bench(args.url, args.latency_ms, args.runs))
        write(results, args.runs, args.url)
        return
    with local_server() as url:
        results = asyncio.run(bench(url, args.latency_ms, args.runs))
    write(results, args.runs, "local, embedded ONNX engine on the CPU")


if __name__ == "__main__":
    main()
