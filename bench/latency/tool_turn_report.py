"""The tool-turn benchmark's report (``bench/latency/tool_turn.py``): its headline, its
Markdown page and its files, ``tool_turn.{json,md}``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.testing.tool_model import AFTER, BEFORE

STEM = "tool_turn"
FIGURES = (
    "first_audio_ms",
    "tool_start_ms",
    "tool_duration_ms",
    "tool_ms",
    "before_audio_ms",
    "wait_ms",
    "silence_ms",
    "filler_audio_ms",
    "answer_start_ms",
    "total_ms",
)


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def headline(report: dict[str, Any]) -> list[str]:
    """The figures worth quoting, one line each (medians)."""
    summary = report["summary"]
    lines = []
    for name, figures in summary.items():
        if name == "calculate" or name.endswith("+ filler"):
            continue
        share = report["silence_over_tool"].get(name)
        lines.append(
            f"- {name}: first audio {_ms(figures['first_audio_ms']['median'])} ms; the tool ran "
            f"{_ms(figures['tool_ms']['median'])} ms, the user heard "
            f"{_ms(figures['silence_ms']['median'])} ms of silence before the answer"
            + ("" if share is None else f" ({share:.0%} of the tool's time)")
        )
    filler, setup = report["filler"], report["setup"]
    lines.append(
        f'- the filler ("{setup["filler"]}" after {setup["filler_after_s"]} s) on the slowest '
        f"lookup: silence {_ms(filler['silence_on_ms'])} ms instead of "
        f"{_ms(filler['silence_off_ms'])} ms ({_ms(filler['filled_ms'])} ms filled); the "
        f"answer's audio starts {filler['answer_later_ms']:+.0f} ms from where it starts without"
    )
    calc = summary["calculate"]
    lines.append(
        f"- calculate (the example's tool): it ran {_ms(calc['tool_ms']['median'])} ms, "
        f"silence {_ms(calc['silence_ms']['median'])} ms"
    )
    return lines


def markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown page."""
    setup, host = report["setup"], report["machine"]
    start = ", ".join(map(str, host["load_average"]))
    end = ", ".join(map(str, host["load_average_at_end"]))
    rows = [
        f"| {name} | "
        + " | ".join(f"{_ms(s[f]['median'])} / {_ms(s[f]['p90'])}" for f in FIGURES)
        + " |"
        for name, s in report["summary"].items()
    ]
    return "\n".join(
        [
            "# Tool calls in a spoken turn",
            "",
            f"`python -m bench.latency.tool_turn`, {report['date']}: {setup['runs']} run(s) a case "
            f"(ABBA), after {setup['warmup']} warm-up turn(s) each, in-process (`Conversations`, "
            f"`WebSocketTransport`); speech: {setup['tts']}. The model is the scripted one of "
            f"`agent/testing/tool_model.py` at {setup['tokens_per_second']:g} tokens/s after "
            f'{setup["first_token_ms"]:g} ms: "{BEFORE}" (spoken at the flush when the tool '
            f'call begins), the tool call, then "{AFTER}" and the result. **`lookup` looks '
            "nothing up**: it is an `async` tool that only waits its set latency, standing for a "
            "database or API call. `calculate` is the example's real tool. Machine: "
            f"{host['cpu']}, {host['cores']} cores; load average {start} at the start, {end} at "
            "the end (1, 5, 15 min, `os.getloadavg`, printed as it runs): figures taken under "
            "load are noisy.",
            "",
            "## Headline (medians)",
            "",
            *headline(report),
            "",
            "## Per case (median / p90, ms from the request)",
            "",
            "| case | first audio | tool start | tool (`tool.end`) | `tool_ms` | audio before "
            "| wait | silence | filler audio | answer starts | total |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            "## How it is measured",
            "",
            "Times are taken as the turn's events arrive in-process. The audio is played by a "
            "model player that plays each chunk at real time once it has arrived and the one "
            "before has ended, with no buffer ahead (`bench.latency.stats.playback`). *Wait*: "
            "from the end of the audio before the tool (its first audio plus its length, if it "
            "never ran dry) to the start of the answer's audio; *silence*: the part of the wait "
            "in which nothing plays (the filler plays in the rest). The text before the tool "
            "covers part of the tool's time: the silence is what is left. *Tool*: "
            "`tool.end`'s `duration_ms`; `tool_ms`: the `metrics` event's (the time at least "
            "one tool ran). *Total*: the turn's last event (its audio plays on after it). JSON: "
            "every run's figures.",
            "",
        ]
    )


def write(report: dict[str, Any], out: Path) -> list[Path]:
    """``tool_turn.{json,md}`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{STEM}.json", out / f"{STEM}.md"]
    paths[0].write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    paths[1].write_text(markdown(report))
    return paths
