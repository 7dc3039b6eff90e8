"""``python -m bench.page``: what the voice chat page plays, measured in headless Chromium.

    python -m bench.page                 # 5 runs each; writes docs/benchmarks/page.{json,md}
    python -m bench.page --runs 1 --out /tmp/page   # a quick look

The local stack as a user starts it (``voice-agent dev``: the embedded ONNX engine, the demo
agent), the page in Chromium with ``instrument.js`` as its init script. Per run:

- **typed**: a prompt typed and sent (Enter); first audio is the first sample the page plays,
  from the moment the form was submitted (the page opens its socket on first use, as a user's).
- **spoken**: a question said by eSpeak NG (a voice not ours) through Chromium's fake
  microphone, the page hands-free; voice to voice runs from the end of speech in what the page
  captured to the first sample of the reply the page plays.
- **long**: a reply of about 45 s, alone, then with a second conversation (another tab)
  speaking at the same time.

Every reply's chunks are checked for gaps (over 5 ms: an underrun). Each figure's stages are
printed beside it, from the socket messages' arrival times. All figures come from one run on
one box; the load average is written beside them.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.page.demo_agent import LONG_PROMPT
from bench.page.figures import (
    chunks,
    end_of_speech,
    first_after,
    gaps,
    least_buffered,
    median_of,
    stages,
    where_dry,
)
from bench.page.report import write
from bench.page.server_view import read_trace, server_view
from tts_protocol import PLAYER_LEAD_S

INSTRUMENT = Path(__file__).with_name("instrument.js")
OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
READY_S = 240.0
REPLY_S = 120.0  # the longest a reply may take to play out on a loaded box
TYPED = (  # questions of five to eight words, as people type them
    "What makes a voice agent feel responsive?",
    "Why stream audio over one connection?",
    "How fast is the speech model here?",
    "What happens when I interrupt you?",
    "Can you explain time to first audio?",
)
SPOKEN = (  # (question, eSpeak NG voice)
    ("What time is it in Tokyo?", "en-us"),
    ("Tell me about sea otters.", "en-gb"),
    ("How far away is the moon?", "en-us+f3"),
    ("Can you recommend a good book?", "en-gb-x-rp+m3"),
    ("Why is the sky blue?", "en-029+m1"),
)
SAID = ("speech.end", "transcript")  # a spoken run's listening events, kept whole
LEAD_SILENCE_S = 2.0  # before the question: the page opens its microphone and listens
TAIL_SILENCE_S = 6.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def local_stack(lead_s: float | None = None, trace: Path | None = None) -> Iterator[str]:
    """``voice-agent dev`` with the page benchmark's demo agent; yields its URL. ``lead_s``:
    the listener's lead its TTS server's pace counts on (None: the default); ``trace``: where
    its TTS server writes its windows' trace (``--window-trace``; None: nowhere)."""
    port, tts_port = free_port(), free_port()
    command = [
        shutil.which("voice-agent") or str(Path(sys.executable).with_name("voice-agent")),
        "dev",
        "--port",
        str(port),
        "--tts-port",
        str(tts_port),
        "--agent",
        "bench.page.demo_agent:create_agent",
    ]
    env = dict(os.environ)
    if lead_s is not None:
        env["TTS_WINDOW_LISTENER_LEAD"] = str(lead_s)
    if trace is not None:
        env["TTS_WINDOW_TRACE"] = str(trace)
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if child.poll() is not None:
                raise RuntimeError(
                    f"voice-agent dev exited: {child.stderr.read().decode()[-2000:]}"
                )  # type: ignore[union-attr]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/ping", timeout=2).status_code == 200:
                    break
            time.sleep(0.5)
        else:
            raise RuntimeError(f"voice-agent dev was not ready in {READY_S} s")
        yield url
    finally:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()


def page_url(url: str, lead_s: float | None = None) -> str:
    """The chat page of the stack at ``url``; with ``lead_s``, its player's lead (``?lead=``)."""
    return f"{url}/" if lead_s is None else f"{url}/?lead={lead_s}"


def open_page(context: Any, url: str) -> Any:
    """A tab of the chat page at ``url`` (``page_url``), instrumented, its configuration
    loaded (its socket opens on load, as a user's does)."""
    page = context.new_page()
    page.add_init_script(path=str(INSTRUMENT))
    page.goto(url)
    page.wait_for_function("window.voiceChat && voiceChat.config.source !== 'loading'")
    return page


def wait_played(page: Any, turns: int = 1) -> dict[str, Any]:
    """Wait until ``turns`` turns have ended and their audio has played; the page's record."""
    page.wait_for_function(
        f"""() => {{
          const t = voiceChat.turns;
          if (t.length < {turns} || t[{turns - 1}].status === 'streaming') return false;
          const s = window.__page.sources;
          const last = s[s.length - 1];
          return !last || performance.now() > last.plays + last.duration * 1000 + 200;
        }}""",
        timeout=REPLY_S * 1000,
    )
    return page.evaluate("window.__page")  # type: ignore[no-any-return]


def sent_at(record: dict[str, Any], kind: str) -> float:
    return next(e["t"] for e in record["sent"] if e["type"] == kind)


def reply_figures(record: dict[str, Any], since: float) -> dict[str, Any]:
    """One reply's chunks after ``since``: when it was first heard, its gaps, its length."""
    reply = chunks(record["sources"], since)
    found = gaps(reply)
    return {
        "first_played": reply[0].start if reply else None,
        "chunks": len(reply),
        "audio_s": round(sum(c.duration_ms for c in reply) / 1000, 2),
        "underruns": sum(gap > 5.0 for gap in found),
        "max_gap_ms": round(max(found, default=0.0), 2),
        "overlap_ms": round(max(0.0, -min(found, default=0.0)), 2),
        "least_buffered_ms": least_buffered(reply),
        "dry": where_dry(reply),
    }


def marks_after(record: dict[str, Any], start: float, first_played: float | None) -> dict[str, Any]:
    received = record["received"]
    return {
        "turn.start": first_after(received, "turn.start", start),
        "segment": first_after(received, "segment", start),
        "audio": first_after(received, "binary", start),
        "played": first_played,
    }


def typed_run(browser: Any, url: str, prompt: str) -> dict[str, Any]:
    context = browser.new_context()
    try:
        page = open_page(context, url)
        page.fill("#prompt", prompt)
        page.press("#prompt", "Enter")
        record = wait_played(page)
    finally:
        context.close()
    submitted, sent = record["submitted"][0], sent_at(record, "prompt")
    reply = reply_figures(record, submitted)
    marks = {
        "submitted": submitted,
        "sent": sent,
        **marks_after(record, sent, reply["first_played"]),
    }
    first = None if reply["first_played"] is None else reply["first_played"] - submitted
    return {"prompt": prompt, "first_audio_ms": first, "stages": stages(marks), **reply}


def write_wav(path: Path, pcm: bytes, rate: int = 16_000) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm)


def question_wav(folder: Path, index: int, text: str, voice: str) -> Path:
    """The question said by eSpeak NG, between silences, as the fake microphone plays it."""
    from bench.speech.espeak_voice import say

    silence = bytes(int(16_000 * LEAD_SILENCE_S) * 2)
    path = folder / f"question{index}.wav"
    write_wav(path, silence + say(text, voice) + bytes(int(16_000 * TAIL_SILENCE_S) * 2))
    return path


def microphone_browser(playwright: Any, chromium: str, wav: Path) -> Any:
    """A fresh Chromium whose fake microphone plays ``wav`` once."""
    args = [
        *CHROMIUM_ARGS,
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}%noloop",
    ]
    return playwright.chromium.launch(executable_path=chromium, headless=True, args=args)


def listen_hands_free(browser: Any, url: str) -> Any:
    """The page in ``browser`` with its microphone allowed, switched to hands-free."""
    page = open_page(browser.new_context(permissions=["microphone"]), url)
    page.click("label[for=mic-free]")
    return page


def spoken_run(playwright: Any, chromium: str, url: str, wav: Path, text: str) -> dict[str, Any]:
    browser = microphone_browser(playwright, chromium, wav)
    try:
        record = wait_played(listen_hands_free(browser, url))
    finally:
        browser.close()
    ended = end_of_speech(record["mic"])
    if ended is None:
        return {"question": text, "voice_to_voice_ms": None, "error": "no speech captured"}
    reply = reply_figures(record, ended)
    received = record["received"]
    marks = {
        "speech ended": ended,
        "speech.end": first_after(received, "speech.end", ended),
        "transcript": first_after(received, "transcript", ended),
        **marks_after(record, ended, reply["first_played"]),
    }
    said = {e["type"]: json.loads(e["text"]) for e in received if e["type"] in SAID}
    heard = None if reply["first_played"] is None else reply["first_played"] - ended
    return {
        "question": text,
        "transcript": said.get("transcript", {}).get("text"),
        "speech_end": said.get("speech.end"),
        "voice_to_voice_ms": heard,
        "stages": stages(marks),
        **reply,
    }


def long_run(browser: Any, url: str, together: bool) -> list[dict[str, Any]]:
    """A long reply, alone or with a second tab's at the same time: each tab's figures."""
    contexts = [browser.new_context() for _ in range(2 if together else 1)]
    try:
        pages = [open_page(context, url) for context in contexts]
        for n, page in enumerate(pages):
            page.fill("#prompt", f"{LONG_PROMPT} about streaming speech, part {n + 1}.")
        for page in pages:
            page.press("#prompt", "Enter")
        records = [wait_played(page) for page in pages]
    finally:
        for context in contexts:
            context.close()
    return [reply_figures(record, sent_at(record, "prompt")) for record in records]


CHROMIUM_ARGS = [  # the benchmark's and the browser tests' (tests/e2e/browser_helpers.py)
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]


def chromium_path() -> str:
    """The system Chromium (Playwright's own browser downloads are not used)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("no Chromium: apt-get install chromium (scripts/test.sh does)")


def gaps_of(replies: list[dict[str, Any]]) -> dict[str, Any]:
    """Underruns of ``replies``: how many, the longest, and how many replies had one."""
    return {
        "count": sum(r.get("underruns", 0) for r in replies),
        "max_gap_ms": max((r.get("max_gap_ms", 0.0) for r in replies), default=0.0),
        "replies_with_one": sum(r.get("underruns", 0) > 0 for r in replies),
        "least_buffered_ms": median_of(r.get("least_buffered_ms") for r in replies),
    }


def summarize(
    typed: list[dict[str, Any]], spoken: list[dict[str, Any]], long: dict[str, list[Any]]
) -> dict[str, Any]:
    """The figures the issue asks for, and each figure's stages (medians)."""
    replies = [*typed, *spoken, *(r for runs in long.values() for r in runs)]

    def stage_medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
        names = runs[0]["stages"] if runs else {}
        return {n: median_of(r["stages"].get(n) for r in runs)["median"] for n in names}

    return {
        "typed_first_audio_ms": median_of(r["first_audio_ms"] for r in typed),
        "typed_stages_ms": stage_medians(typed),
        "spoken_voice_to_voice_ms": median_of(r["voice_to_voice_ms"] for r in spoken),
        "spoken_stages_ms": stage_medians([r for r in spoken if "stages" in r]),
        "underruns": {
            **gaps_of(replies),
            "replies": len(replies),
            "by_kind": {
                "typed": gaps_of(typed),
                "spoken": gaps_of(spoken),
                **{f"long_{name}": gaps_of(runs) for name, runs in long.items()},
            },
        },
        "long_reply": {
            name: {
                "audio_s": median_of(r["audio_s"] for r in runs),
                "underruns": sum(r["underruns"] for r in runs),
                "max_gap_ms": max((r["max_gap_ms"] for r in runs), default=0.0),
            }
            for name, runs in long.items()
        },
    }


def commit() -> str:
    """The commit of the code measured (this checkout's), ``+`` when it has changes."""
    here = Path(__file__).resolve().parent
    git = ["git", "-C", str(here)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True)
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def provenance(load_before: tuple[float, float, float]) -> dict[str, Any]:
    """What a page benchmark writes beside its figures: the load average before it and now,
    the machine, the commit measured and the date."""
    return {
        "load": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "commit": commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    chromium = chromium_path()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "windows.jsonl"
        with local_stack(args.lead, trace) as stack:
            figures = _runs(args, chromium, page_url(stack, args.lead), Path(folder))
        records = read_trace(trace)
    spans, each_run = figures.pop("spans"), {k: figures.pop(k) for k in ("typed", "spoken", "long")}
    return {
        **figures,
        "server_view": {kind: server_view(records, *span) for kind, span in spans.items()},
        "runs": args.runs,
        "lead_s": args.lead if args.lead is not None else PLAYER_LEAD_S,
        **provenance(load_before),
        **each_run,
    }


def _runs(args: argparse.Namespace, chromium: str, url: str, folder: Path) -> dict[str, Any]:
    """Every run on the stack at ``url``: the figures, each run, and the wall-clock span of
    each kind of long run (``spans``, for the server's view)."""
    from playwright.sync_api import sync_playwright

    wavs = [question_wav(folder, i, t, v) for i, (t, v) in enumerate(SPOKEN[: args.runs])]
    spans: dict[str, tuple[float, float]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_ARGS
        )
        open_page(browser.new_context(), url).close()  # warm: models loaded, voices known
        typed = [typed_run(browser, url, TYPED[i % len(TYPED)]) for i in range(args.runs)]
        spoken = [
            spoken_run(playwright, chromium, url, wav, SPOKEN[i][0]) for i, wav in enumerate(wavs)
        ]
        # the loaded case last: the typed and spoken replies meet the same server state
        long: dict[str, list[dict[str, Any]]] = {}
        for kind, together in (("alone", False), ("with_second_conversation", True)):
            started = time.time()
            long[kind] = [
                r for _ in range(args.long_runs) for r in long_run(browser, url, together)
            ]
            spans[kind] = (started, time.time())
        browser.close()
    return {
        **summarize(typed, spoken, long),
        "spans": spans,
        "typed": typed,
        "spoken": spoken,
        "long": long,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.page", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--runs", type=int, default=5, help="typed and spoken runs (default 5)")
    parser.add_argument("--long-runs", type=int, default=1, help="long replies of each kind")
    parser.add_argument("--out", type=Path, default=OUT, help="where page.json and page.md go")
    parser.add_argument(
        "--lead",
        type=float,
        help="the player's lead (s), in the page (?lead=) and the TTS server's pace alike "
        "(default: tts_protocol.PLAYER_LEAD_S)",
    )
    args = parser.parse_args(argv)
    figures = run(args)
    write(figures, args.out)
    print(json.dumps({k: figures[k] for k in list(figures)[:6]}, indent=1))
    return 0
