"""``voice-agent bench``: first audio vs. completion, stream vs. batch, overhead over the floor.

    voice-agent bench                   # the local stack; writes docs/benchmarks/agent_latency.*
    voice-agent bench --quick --out DIR # a short smoke run
    voice-agent bench --tts-url ws://127.0.0.1:8080/invocations-bidirectional-stream
    voice-agent bench --agent-url http://127.0.0.1:8000 --tts-url ws://...   # a running agent
    voice-agent bench --agent-arn arn:aws:bedrock-agentcore:REGION:ACCOUNT:runtime/ID

The demo model streams a fixed reply of a fixed prompt at a fixed token rate. Per run and as
median/p90: time to first text, to first audio, to completion, audio duration, segments,
playback underruns, and the overhead over the floor; and the browser leg, SSE vs. WebSocket
(``/ws``): first audio and bytes received per second of audio, the same reply, same run. The
floor of a turn is the moment its first segment's text was complete (its ``segment`` event)
plus the time to first audio of that text spoken alone on the same TTS server, measured right
after the turn. Levels, each measured in the same run: the TTS transport alone
(``bench.latency.tts_transport_bench``), the agent in-process (``Turn.run``), over HTTP SSE (the dev
server, or ``--agent-url``/``--agent-arn``), the browser leg SSE vs. WebSocket (not with
``--agent-arn``), and 1..8 concurrent conversations. Stream and batch runs (and SSE and
WebSocket turns) alternate (ABBA) so that drift hits both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import os
import platform
import socket
import sys
import threading
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.latency.levels import Stack, measure
from bench.latency.plan import QUICK, Plan
from bench.latency.report import STEM, headline, write
from bench.latency.targets import PROMPT, AgentCoreTarget, HttpTarget, Target, WebSocketTarget
from tts_server.engines import window_plan
from tts_server.settings import parse_settings
from voice_agent_cli.local_tts import local_tts

if TYPE_CHECKING:
    from agent.config import ListeningConfig
    from agent.core.service import VoiceAgent

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"


def local_tts_description() -> str:
    """The local TTS child as it runs: it reads the ``TTS_*`` environment as any server does."""
    plan = window_plan(parse_settings([], os.environ))
    decoding = (
        "each sentence decoded whole"
        if plan is None
        else f"decoded in windows ({plan.first}, {plan.size}, {plan.context}, "
        f"growth {plan.growth:g})"
    )
    return f"local child process (`python -m tts_server`: embedded ONNX model, CPU, {decoding})"


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

    plan = plan_from(args)
    host = machine()
    if (load := host["load_average"][0]) > 1.0:
        print(f"bench: load average {load}: the figures may be noisy", file=sys.stderr)
    with contextlib.ExitStack() as stack:
        tts_url, tts = args.tts_url, f"{args.tts_url} (running)"
        if not tts_url and not (args.agent_url or args.agent_arn):
            tts_url = stack.enter_context(local_tts("127.0.0.1", _free_port(), "warning"))
            tts = local_tts_description()
        websocket: WebSocketTarget | None = None
        if args.agent_arn:
            agent: Target = AgentCoreTarget(args.agent_arn, args.region, args.qualifier)
            description, name, local = f"AgentCore runtime {args.agent_arn}", "remote", False
        elif args.agent_url:
            agent, description = HttpTarget(args.agent_url), f"{args.agent_url} (running)"
            websocket = WebSocketTarget(ws_url(args.agent_url))
            name, local = "remote", False
        else:
            url, voice_agent = stack.enter_context(dev_server(tts_url))
            agent, description = HttpTarget(url, voice_agent), "dev server in a thread, demo model"
            websocket = WebSocketTarget(ws_url(url), voice_agent)
            name, local = "http", True
        setup = {
            "prompt": PROMPT,
            "quick": args.quick,
            "tts": tts if tts_url else "not measured (no --tts-url)",
            "agent": description,
            **dataclasses.asdict(plan),
        }
        measured = Stack(tts_url, agent, name, local, websocket)
        results = asyncio.run(_measure_and_close(measured, plan))
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
        if stack.websocket is not None:
            await stack.websocket.aclose()


def ws_url(http_url: str) -> str:
    """The agent's WebSocket leg next to its HTTP URL."""
    return "ws" + http_url.rstrip("/").removeprefix("http") + "/ws"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def dev_server(
    tts_url: str, listening: ListeningConfig | None = None
) -> Iterator[tuple[str, VoiceAgent]]:
    """The dev server with the demo model (and ``listening``, else the defaults), in a thread
    on a free port."""
    import uvicorn

    from agent.config import AgentConfig
    from agent.doors.devserver import create_app

    config = AgentConfig(model="demo", tts_url=tts_url)
    if listening is not None:
        config = dataclasses.replace(config, listening=listening)
    app = create_app(config)
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


AGENT_PACKAGES = ("onnxruntime", "strands-agents", "websockets", "uvicorn", "fastapi", "httpx")


def machine(packages: tuple[str, ...] = AGENT_PACKAGES) -> dict[str, Any]:
    """The machine and the versions of ``packages``, which matter to the figures."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model n")), "")
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
