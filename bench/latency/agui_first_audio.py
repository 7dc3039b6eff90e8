"""First audio over AG-UI against our own SSE route, in one run: the ratio of their medians.

    python -m bench.latency.agui_first_audio [--runs N] [--warmup N] [--tts-url URL] [--out DIR]

Two dev servers in this process, one per protocol (``create_app(protocol="http")`` and
``protocol="agui"``), the demo model at its defaults (40 tokens/s after 300 ms, 4 sentences), on
one real TTS server: a running one (``--tts-url``), else the local one ``voice-agent dev`` starts
(the embedded ONNX engine, CPU, in a child process). Each run is one whole turn of the same prompt
in a fresh conversation (thread); the routes alternate ABBA so that drift hits them alike.

Per turn, from just before the POST (the client's clock): first audio (our ``audio.delta``, or
AG-UI's ``voice.audio`` custom event), first text, the end of the stream; and the server's own
``ttfa_ms`` (our ``metrics`` event, AG-UI's ``voice.metrics``). The headline is AG-UI's median
first audio over ours (issue 51 asks for at most 1.1). Writes ``agui_first_audio.{json,md}`` to
``--out`` (``docs/benchmarks``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.latency.agent_latency import _free_port, local_tts_description, machine
from bench.latency.stats import spread
from voice_agent_cli.local_tts import local_tts

STEM = "agui_first_audio"
OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
PROMPT = "Tell me about streaming speech"
ROUTES = ("ours", "agui")
LIMIT = 1.1  # issue 51: AG-UI's median first audio at most this many times ours
METRICS = ("first_audio_ms", "first_text_ms", "end_ms", "server_ttfa_ms")


@contextlib.contextmanager
def dev_server(tts_url: str, protocol: str) -> Iterator[str]:
    """The dev server on ``protocol`` with the demo model, in a thread on a free port."""
    import uvicorn

    from agent.config import AgentConfig
    from agent.doors.devserver import create_app

    app = create_app(AgentConfig(model="demo", tts_url=tts_url), protocol=protocol)  # type: ignore[arg-type]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name=f"bench-{protocol}", daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError(f"the {protocol} dev server did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def body(route: str, conversation: str) -> dict[str, Any]:
    """The request of one turn of ``PROMPT`` in ``conversation``, on ``route``."""
    if route == "ours":
        return {"prompt": PROMPT}
    message = {"id": "m1", "role": "user", "content": PROMPT}
    return {"threadId": conversation, "runId": uuid.uuid4().hex, "messages": [message]}


def reading(route: str, event: dict[str, Any]) -> tuple[str | None, float | None]:
    """What an event is to the measure (``audio``, ``text`` or None) and the server's ttfa in
    it, if it carries it."""
    kind, name = event.get("type"), event.get("name")
    if kind == "audio.delta" or (kind == "CUSTOM" and name == "voice.audio"):
        return "audio", None
    if kind in ("text.delta", "TEXT_MESSAGE_CONTENT"):
        return "text", None
    if kind == "metrics":
        return None, event["ttfa_ms"]
    if kind == "CUSTOM" and name == "voice.metrics":
        return None, event["value"]["ttfaMs"]
    return None, None


async def turn(http: httpx.AsyncClient, url: str, route: str) -> dict[str, Any]:
    """One whole turn on ``route``: its times in ms from just before the POST."""
    conversation = f"bench-{uuid.uuid4().hex[:8]}"
    headers = {"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": conversation}
    times: dict[str, Any] = {"route": route}
    started = time.perf_counter()
    async with http.stream("POST", f"{url}/invocations", json=body(route, conversation),
                           headers=headers) as response:  # fmt: skip
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            kind, ttfa = reading(route, json.loads(line.removeprefix("data: ")))
            now = round((time.perf_counter() - started) * 1000, 1)
            if kind is not None:
                times.setdefault(f"first_{kind}_ms", now)
            if ttfa is not None:
                times["server_ttfa_ms"] = ttfa
    times["end_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return times


async def measure(urls: dict[str, str], runs: int, warmup: int) -> list[dict[str, Any]]:
    """``warmup`` unreported turns per route, then ``runs`` each, ABBA."""
    measured: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=120) as http:
        for _ in range(warmup):
            for route in ROUTES:
                await turn(http, urls[route], route)
        for n in range(runs):
            order = ROUTES if n % 2 == 0 else ROUTES[::-1]
            for route in order:
                measured.append(await turn(http, urls[route], route) | {"run": n})
                print(
                    f"  run {n + 1}/{runs} {route}: first audio {measured[-1]['first_audio_ms']} ms"
                )
    return measured


def summarize(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and p90 of each figure per route, and AG-UI's median first audio over ours."""
    by_route = {
        route: {m: spread([t.get(m) for t in turns if t["route"] == route]) for m in METRICS}
        for route in ROUTES
    }
    ours, agui = (by_route[r]["first_audio_ms"]["median"] for r in ROUTES)
    ratio = round(agui / ours, 3) if agui and ours else None
    return {
        "routes": by_route,
        "ratio": ratio,
        "limit": LIMIT,
        "within": ratio is not None and ratio <= LIMIT,
    }


def headline(report: dict[str, Any]) -> list[str]:
    """The figures, as printed and as the report's first lines."""
    routes, ratio = report["summary"]["routes"], report["summary"]["ratio"]
    ours, agui = (routes[r]["first_audio_ms"]["median"] for r in ROUTES)
    verdict = "within" if report["summary"]["within"] else "OVER"
    return [
        f"- first audio, our SSE route: {ours} ms (median of {report['setup']['runs']})",
        f"- first audio, AG-UI (POST /invocations, SSE): {agui} ms",
        f"- AG-UI over ours: {ratio} ({verdict} the limit of {LIMIT})",
    ]


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: headline, per route, how it is measured."""
    setup, host = report["setup"], report["machine"]
    lines = [
        "# First audio over AG-UI against our own SSE route",
        "",
        f"`python -m bench.latency.{STEM}`, {report['date']}: {setup['runs']} run(s) a route "
        f"(ABBA) after {setup['warmup']} warm-up turn(s) each; two dev servers in one process, "
        f"the demo model (40 tokens/s after 300 ms, 4 sentences); speech: {setup['tts']}. "
        f"Machine: {host['cpu']}, {host['cores']} cores; load average "
        f"{', '.join(map(str, host['load_average']))} at the start, "
        f"{', '.join(map(str, host['load_average_at_end']))} at the end.",
        "",
        "## Headline (medians)",
        "",
        *headline(report),
        "",
        "## Per route (median / p90, ms from just before the POST)",
        "",
        "| route | first audio | first text | stream end | server's ttfa |",
        "|---|---|---|---|---|",
    ]
    labels = ('ours (`{"prompt"}`)', "AG-UI (`RunAgentInput`)")
    for route, label in zip(ROUTES, labels, strict=True):
        row = report["summary"]["routes"][route]
        cells = [f"{row[m]['median']} / {row[m]['p90']}" for m in METRICS]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    lines += [
        "",
        "## How it is measured",
        "",
        "Each run is one whole turn of the same prompt in a fresh conversation (an AG-UI thread), "
        "read to its end as SSE by `httpx` in this process. *First audio*: the first "
        "`audio.delta` (ours) or `voice.audio` custom event (AG-UI) read off the stream; "
        "*first text*: the first `text.delta` or `TEXT_MESSAGE_CONTENT`; *server's ttfa*: the "
        "turn's own `ttfa_ms` (`metrics`, or AG-UI's `voice.metrics`), from the request's arrival "
        "to its first audio in the server. Both routes run the same `Turn` on the same "
        "`FrontDoor` code; AG-UI adds the translation to ag-ui-protocol events and their pydantic "
        "serialization. JSON: every run's figures.",
        "",
    ]
    return "\n".join(lines)


def write(report: dict[str, Any], out: Path) -> list[Path]:
    """``agui_first_audio.json`` and ``.md`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / f"{STEM}.json", out / f"{STEM}.md"
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    md_path.write_text(markdown(report))
    return [json_path, md_path]


def main(argv: list[str] | None = None) -> int:
    """Set up the two servers, measure, write the report; status 1 if the ratio is over."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="turns per route (10)")
    parser.add_argument("--warmup", type=int, default=1, help="unreported turns per route (1)")
    parser.add_argument("--tts-url", help="a running TTS server (default: start one, as `dev`)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where {STEM}.* go")
    args = parser.parse_args(argv)
    host = machine()
    with contextlib.ExitStack() as stack:
        tts_url, tts = args.tts_url, f"{args.tts_url} (running)"
        if not tts_url:
            tts_url = stack.enter_context(local_tts("127.0.0.1", _free_port(), "warning"))
            tts = local_tts_description()
        urls = {
            route: stack.enter_context(dev_server(tts_url, protocol))
            for route, protocol in zip(ROUTES, ("http", "agui"), strict=True)
        }
        turns = asyncio.run(measure(urls, args.runs, args.warmup))
    report = {
        "benchmark": STEM,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": host | {"load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "setup": {"prompt": PROMPT, "runs": args.runs, "warmup": args.warmup, "tts": tts},
        "summary": summarize(turns),
        "turns": turns,
    }
    for path in write(report, args.out):
        print(f"wrote {path}")
    print("\n".join(headline(report)))
    return 0 if report["summary"]["within"] else 1


if __name__ == "__main__":
    sys.exit(main())
