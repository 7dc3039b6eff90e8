"""The windows' pace against decode times that stray: how often a listener runs dry.

    python -m bench.latency.pace_jitter [--replies 60]

A simulation on a scripted clock (no model, no sleeping) of the production schedule:
``WindowPlan.decoded`` with the engine's ``DecodeRate`` (kept from reply to reply, as one engine's
is) and a connection's ``PlaybackClock`` (the page's 0.1 s lead). Each reply is three sentences of
150 frames (3.75 s each, a 12-frame leading pad, each sentence's text side a twentieth of its
decode). A window's decode takes the real-time factor x its decoded frames' audio (a call
costing ``CALL_FRAMES`` frames more, as the engine's do) x a factor
drawn from a log-normal of spread ``sigma`` (seeded): 0 is a machine whose every window takes
the average, 0.2 one whose windows stray by about 20 % (this shared box, docs/tts_server.md).
``start`` multiplies the first three windows of each reply (a page that starts playing and
drawing as its reply begins). Counted after each reply's first window: the chunks the listener
waited for (an underrun, over 5 ms), and the time waited. Writes
``docs/benchmarks/pace_jitter.{json,md}``.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import random
from pathlib import Path
from typing import Any

from bench.latency.report import write_files
from bench.page.run import commit
from tts_server.engines.pace import CALL_FRAMES, DecodeRate, PlaybackClock
from tts_server.engines.windows import FRAME_SECONDS, Window, window_plan
from tts_server.settings import Settings

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
FRAMES, PAD, SENTENCES = 150, 12, 3
RTFS = (0.3, 0.4, 0.5, 0.6)
SIGMAS = (0.0, 0.1, 0.2)
STARTS = (1.0, 1.4)
SLOW_WINDOWS = 3
UNDERRUN_S = 0.005


class ScriptedClock:
    """A clock the simulation moves."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


async def reply(
    rtf: float, sigma: float, start: float, rate: DecodeRate, draw: random.Random
) -> list[float]:
    """One reply paced by ``rate``: how long the listener waited for each chunk."""
    plan = window_plan(Settings())
    if plan is None:
        raise RuntimeError("the default engine decodes in windows")
    now = ScriptedClock()
    rate.now = now
    clock = PlaybackClock(plan.listener_lead_s, now)
    waited: list[float] = []

    async def decode(window: Window) -> Window:
        slowed = start if len(waited) < SLOW_WINDOWS else 1.0
        stray = draw.lognormvariate(0.0, sigma) if sigma else 1.0
        now.t += rtf * FRAME_SECONDS * (window.decoded_frames + CALL_FRAMES) * slowed * stray
        return window

    for _ in range(SENTENCES):
        now.t += 0.05 * FRAMES * FRAME_SECONDS * rtf  # the text side
        async for window, _, _ in plan.decoded(decode, FRAMES, PAD, clock=clock, rate=rate):
            audio = window.stop - max(window.start, PAD)  # the leading pad is trimmed away
            waited.append(clock.sent(audio * FRAME_SECONDS))
    return waited


async def case(rtf: float, sigma: float, start: float, replies: int) -> dict[str, Any]:
    """``replies`` replies on one engine's rate, in turn."""
    draw = random.Random(f"{rtf} {sigma} {start}")
    rate = DecodeRate(rtf * FRAME_SECONDS)  # the engine's calibration
    underruns = dry = 0
    waited_s = 0.0
    for _ in range(replies):
        waited = (await reply(rtf, sigma, start, rate, draw))[1:]
        late = [w for w in waited if w > UNDERRUN_S]
        underruns += len(late)
        dry += bool(late)
        waited_s += sum(waited)
    return {
        "rtf": rtf,
        "sigma": sigma,
        "start": start,
        "replies": replies,
        "underruns": underruns,
        "replies_with_one": dry,
        "waited_ms_per_reply": round(1000 * waited_s / replies, 1),
        "margin_after": round(rate.margin, 3),
        "opening_slowdown_after": round(rate.opening_seconds_per_frame / rate.seconds_per_frame, 3),
    }


def to_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# The pace against decode times that stray (simulated)",
        "",
        f"`python -m bench.latency.pace_jitter`, {report['replies']} replies a case, commit "
        f"{report['commit']}; a scripted clock, so the figures are the schedule's, not this "
        "machine's. Each reply: 3 sentences of 150 frames; a window's decode is the real-time "
        f"factor x the audio of its frames and the call's {CALL_FRAMES} x a log-normal draw of "
        "spread sigma; start: the first 3 "
        "windows of each reply that much slower. Underruns after each reply's first window.",
        "",
        "| RTF | sigma | start | underruns | replies with one | waited ms a reply "
        "| margin after | opening slowdown after |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in report["cases"]:
        lines.append(
            f"| {c['rtf']} | {c['sigma']} | {c['start']} | {c['underruns']} | "
            f"{c['replies_with_one']} | {c['waited_ms_per_reply']} | {c['margin_after']} | "
            f"{c['opening_slowdown_after']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=60)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    cases = [
        asyncio.run(case(rtf, sigma, start, args.replies))
        for start in STARTS
        for sigma in SIGMAS
        for rtf in RTFS
    ]
    for c in cases:
        print(c)
    report = {
        "replies": args.replies,
        "commit": commit(),
        "python": platform.python_version(),
        "cases": cases,
    }
    write_files(report, args.out, "pace_jitter", to_markdown, lambda _r, _p: None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
