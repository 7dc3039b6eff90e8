"""``python -m bench.page.cpu``: where the CPU goes while the page waits for and plays a reply.

    python -m bench.page.cpu     # 5 typed, 5 spoken replies; writes docs/benchmarks/page_cpu.*

On the 2-core box the agent, its TTS server and Chromium share the cores, so what the page
costs is taken from the synthesis of the first window (docs/web.md, "Where the time goes").
The local stack as a user starts it, the page in headless Chromium; per reply, the CPU
seconds each process spent (``/proc``: user and system time), as cores (seconds per second).
A typed reply: the page idle before the prompt, the first 1.5 s after it (the first sentence
is written and its first window synthesized) and the whole reply to its last sample. A spoken
one (``bench.page``'s questions, eSpeak NG through a fresh browser's fake microphone, the page
hands-free): the question heard (hands-free on to the transcript), then the same two phases
from the transcript, which is where a spoken reply's prompt is sent. Chromium's processes are
told apart by their ``--type`` (renderer, GPU, the audio service).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.page.run import (
    CHROMIUM_ARGS,
    OUT,
    REPLY_S,
    SPOKEN,
    TYPED,
    chromium_path,
    listen_hands_free,
    local_stack,
    microphone_browser,
    open_page,
    provenance,
    question_wav,
    wait_played,
)

TICK = os.sysconf("SC_CLK_TCK")
IDLE_S = 3.0
FIRST_S = 1.5  # the first sentence and its first window (typed first audio is about 1.2 s)
PHASES = ("idle", "first", "reply")
SPOKEN_PHASES = ("heard", "first", "reply")
PHASE_NAMES = {
    "idle": f"idle page ({IDLE_S:g} s)",
    "heard": "the question heard",
    "first": f"first {FIRST_S:g} s",
    "reply": "whole reply",
}
TRANSCRIBED = "() => window.__page.received.some(e => e.type === 'transcript')"


def stat(pid: int) -> tuple[int, float]:
    """A process's parent and its CPU seconds (user and system), from ``/proc``."""
    with open(f"/proc/{pid}/stat") as file:
        fields = file.read().rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def descendants(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                children[stat(int(entry))[0]].append(int(entry))
            except (FileNotFoundError, ProcessLookupError):
                continue  # it ended while the table was read
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def command(pid: int) -> list[str]:
    """A process's arguments. Chromium rewrites its helpers' in place, as one string: split at
    spaces too, so that ``--type=renderer`` is an argument of its own either way."""
    with open(f"/proc/{pid}/cmdline", "rb") as file:
        return file.read().decode(errors="replace").replace("\0", " ").split()


def is_browser(argv: list[str]) -> bool:
    """Whether ``argv`` is Chromium's browser process (the root of its others)."""
    name = Path(argv[0]).name if argv else ""
    return (
        "chrom" in name
        and "crashpad" not in name
        and not any(arg.startswith("--type=") for arg in argv)
    )


def group(pid: int, stack: int, tts: set[int]) -> str:
    """Which part of the box ``pid`` is: the agent, its TTS server, or a kind of Chromium's."""
    if pid in tts:
        return "tts server"
    if pid == stack:
        return "agent"
    kinds = [arg.split("=", 1)[1] for arg in command(pid) if arg.startswith("--type=")]
    sub = [arg.rsplit(".", 1)[-1] for arg in command(pid) if arg.startswith("--utility-sub-type")]
    return "chromium " + (kinds[0] if kinds else "browser") + (f" ({sub[0]})" if sub else "")


def cpu_by_group(stack: int, browser: int) -> dict[str, float]:
    """CPU seconds so far of every process of the stack and of the browser, by group."""
    ours = descendants(stack)
    tts = set(ours) - {stack}
    totals: dict[str, float] = defaultdict(float)
    for pid in [*ours, *descendants(browser)]:
        try:
            totals[group(pid, stack, tts)] += stat(pid)[1]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return dict(totals)


def cores(after: dict[str, float], before: dict[str, float], seconds: float) -> dict[str, float]:
    """Each group's CPU between two readings, as cores."""
    return {name: (after[name] - before.get(name, 0.0)) / seconds for name in after}


def played(page: Any, stack: int, root: int, sent: dict[str, float]) -> dict[str, Any]:
    """From ``sent``, the readings as a reply's prompt went (now): the cores each group used
    in the first ``FIRST_S`` and until the page has played the reply's last sample."""
    start = time.monotonic()
    time.sleep(FIRST_S)
    first = cpu_by_group(stack, root)
    wait_played(page)
    end, took = cpu_by_group(stack, root), time.monotonic() - start
    return {
        "reply_s": round(took, 2),
        "first": cores(first, sent, FIRST_S),
        "reply": cores(end, sent, took),
    }


def reply_run(browser: Any, url: str, prompt: str, stack: int, root: int) -> dict[str, Any]:
    """One typed reply: the cores each group used in each phase."""
    context = browser.new_context()
    try:
        page = open_page(context, url)
        time.sleep(1.0)
        idle = cpu_by_group(stack, root)
        time.sleep(IDLE_S)
        sent = cpu_by_group(stack, root)
        page.fill("#prompt", prompt)
        page.press("#prompt", "Enter")
        phases = played(page, stack, root, sent)
    finally:
        context.close()
    return {"prompt": prompt, "idle": cores(sent, idle, IDLE_S), **phases}


def browser_root() -> int:
    """The browser process of the Chromium running below this process."""
    found = [pid for pid in descendants(os.getpid()) if is_browser(command(pid))]
    return max(found, key=lambda pid: len(descendants(pid)))  # a wrapper's child is its own


def spoken_reply_run(
    playwright: Any, chromium: str, url: str, wav: Path, question: str, stack: int
) -> dict[str, Any]:
    """One spoken reply, in a fresh browser whose fake microphone plays ``wav``: the cores each
    group used while the question was heard, in the first 1.5 s after its transcript and from
    the transcript to the reply's last sample."""
    browser = microphone_browser(playwright, chromium, wav)
    try:
        root = browser_root()
        page = listen_hands_free(browser, url)
        listening, began = cpu_by_group(stack, root), time.monotonic()
        page.wait_for_function(TRANSCRIBED, timeout=REPLY_S * 1000)
        heard, took = cpu_by_group(stack, root), time.monotonic() - began
        phases = played(page, stack, root, heard)
    finally:
        browser.close()
    return {"question": question, "heard": cores(heard, listening, took), **phases}


def summarize(
    runs: list[dict[str, Any]], phases: tuple[str, ...] = PHASES
) -> dict[str, dict[str, float]]:
    """Medians over the runs, by phase and group (cores)."""
    names = sorted({name for run in runs for phase in phases for name in run[phase]})
    return {
        phase: {
            name: round(statistics.median(run[phase].get(name, 0.0) for run in runs), 3)
            for name in names
        }
        for phase in phases
    }


def table(medians: dict[str, dict[str, float]]) -> list[str]:
    """One kind of reply's medians, a row per group and a total."""
    phases = list(medians)
    lines = [
        "| process | " + " | ".join(PHASE_NAMES[phase] for phase in phases) + " |",
        "|---|" + "---:|" * len(phases),
    ]
    for name in medians["reply"]:
        row = [f"{medians[phase][name]:.3f}" for phase in phases]
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    total = [f"{sum(medians[phase].values()):.3f}" for phase in phases]
    return [*lines, "| **all** | " + " | ".join(total) + " |"]


def markdown(figures: dict[str, Any]) -> str:
    return (
        "\n".join(
            [
                "# Where the CPU goes around a reply (headless Chromium, local stack)",
                "",
                f"`python -m bench.page.cpu`, {figures['date']}, {figures['runs']} typed and "
                f"{len(figures['spoken'])} spoken replies, {figures['machine']['cpus']} CPUs, load "
                f"average before {figures['load']['before']}, after {figures['load']['after']}; "
                f"commit {figures['commit']}. Medians, in cores (CPU seconds per second); from "
                "`/proc`. A spoken reply's phases run from its transcript (the prompt sent), and "
                "its browser is its own, started for it with the fake microphone.",
                "",
                "## Typed (from the prompt)",
                "",
                *table(figures["cores"]),
                "",
                "## Spoken (from the transcript)",
                "",
                *table(figures["spoken_cores"]),
            ]
        )
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(prog="python -m bench.page.cpu", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="typed and spoken replies (5)")
    parser.add_argument("--out", type=Path, default=OUT, help="where page_cpu.* go")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    chromium = chromium_path()
    with (
        tempfile.TemporaryDirectory() as folder,
        local_stack() as url,
        sync_playwright() as playwright,
    ):
        [stack] = [pid for pid in descendants(os.getpid()) if "dev" in command(pid)[1:3]]
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_ARGS
        )
        root = browser_root()
        open_page(browser.new_context(), url).close()  # warm: models loaded, voices known
        typed = [
            reply_run(browser, url, TYPED[i % len(TYPED)], stack, root) for i in range(args.runs)
        ]
        browser.close()
        said = [SPOKEN[i % len(SPOKEN)] for i in range(args.runs)]
        spoken = [
            spoken_reply_run(
                playwright, chromium, url, question_wav(Path(folder), i, text, voice), text, stack
            )
            for i, (text, voice) in enumerate(said)
        ]
    figures = {
        "cores": summarize(typed),
        "spoken_cores": summarize(spoken, SPOKEN_PHASES),
        "runs": args.runs,
        **provenance(load_before),
        "replies": typed,
        "spoken": spoken,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "page_cpu.json").write_text(json.dumps(figures, indent=1) + "\n")
    (args.out / "page_cpu.md").write_text(markdown(figures))
    print(markdown(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
