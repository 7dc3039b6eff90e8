"""``python -m bench.page.cpu``: where the CPU goes while the page waits for and plays a reply.

    python -m bench.page.cpu     # 5 typed replies; writes docs/benchmarks/page_cpu.{json,md}

On the 2-core box the agent, its TTS server and Chromium share the cores, so what the page
costs is taken from the synthesis of the first window (docs/web.md, "Where the time goes").
The local stack as a user starts it, the page in headless Chromium; per typed reply, the CPU
seconds each process spent (``/proc``: user and system time), as cores (seconds per second):
the page idle before the prompt, the first 1.5 s after it (the first sentence is written and
its first window synthesized) and the whole reply to its last sample. Chromium's processes are
told apart by their ``--type`` (renderer, GPU, the audio service).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.page.run import (
    CHROMIUM_ARGS,
    OUT,
    TYPED,
    chromium_path,
    local_stack,
    open_page,
    provenance,
    wait_played,
)

TICK = os.sysconf("SC_CLK_TCK")
IDLE_S = 3.0
FIRST_S = 1.5  # the first sentence and its first window (typed first audio is about 1.2 s)
PHASES = ("idle", "first", "reply")


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


def reply_run(browser: Any, url: str, prompt: str, stack: int, root: int) -> dict[str, Any]:
    """One typed reply: the cores each group used in each phase."""
    context = browser.new_context()
    try:
        page = open_page(context, url)
        time.sleep(1.0)
        idle = cpu_by_group(stack, root)
        time.sleep(IDLE_S)
        sent, start = cpu_by_group(stack, root), time.monotonic()
        page.fill("#prompt", prompt)
        page.press("#prompt", "Enter")
        time.sleep(FIRST_S)
        first = cpu_by_group(stack, root)
        wait_played(page)
        end, took = cpu_by_group(stack, root), time.monotonic() - start
    finally:
        context.close()
    return {
        "prompt": prompt,
        "reply_s": round(took, 2),
        "idle": cores(sent, idle, IDLE_S),
        "first": cores(first, sent, FIRST_S),
        "reply": cores(end, sent, took),
    }


def summarize(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Medians over the runs, by phase and group (cores)."""
    names = sorted({name for run in runs for phase in PHASES for name in run[phase]})
    return {
        phase: {
            name: round(statistics.median(run[phase].get(name, 0.0) for run in runs), 3)
            for name in names
        }
        for phase in PHASES
    }


def markdown(figures: dict[str, Any]) -> str:
    medians = figures["cores"]
    lines = [
        "# Where the CPU goes around a typed reply (headless Chromium, local stack)",
        "",
        f"`python -m bench.page.cpu`, {figures['date']}, {figures['runs']} typed replies, "
        f"{figures['machine']['cpus']} CPUs, load average before {figures['load']['before']}, "
        f"after {figures['load']['after']}; commit {figures['commit']}. Medians, in cores (CPU "
        "seconds per second); from `/proc`.",
        "",
        f"| process | idle page ({IDLE_S:g} s) | first {FIRST_S:g} s after the prompt "
        "| whole reply |",
        "|---|---:|---:|---:|",
    ]
    for name in medians["reply"]:
        row = [f"{medians[phase][name]:.3f}" for phase in PHASES]
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    total = [f"{sum(medians[phase].values()):.3f}" for phase in PHASES]
    lines.append("| **all** | " + " | ".join(total) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(prog="python -m bench.page.cpu", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="typed replies (default 5)")
    parser.add_argument("--out", type=Path, default=OUT, help="where page_cpu.* go")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with local_stack() as url, sync_playwright() as playwright:
        [stack] = [pid for pid in descendants(os.getpid()) if "dev" in command(pid)[1:3]]
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
        )
        found = [pid for pid in descendants(os.getpid()) if is_browser(command(pid))]
        root = max(found, key=lambda pid: len(descendants(pid)))  # a wrapper's child is its own
        open_page(browser.new_context(), url).close()  # warm: models loaded, voices known
        runs = [
            reply_run(browser, url, TYPED[i % len(TYPED)], stack, root) for i in range(args.runs)
        ]
        browser.close()
    figures = {
        "cores": summarize(runs),
        "runs": args.runs,
        **provenance(load_before),
        "replies": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "page_cpu.json").write_text(json.dumps(figures, indent=1) + "\n")
    (args.out / "page_cpu.md").write_text(markdown(figures))
    print(markdown(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
