"""Two runs of the latency benchmarks side by side: a refactor's before and after.

    python -m bench.latency.before_after BEFORE_DIR AFTER_DIR --title T --out FILE.md

Each folder holds what ``voice-agent bench`` (``agent_latency.json``) and, optionally,
``python -m bench.latency.voice_to_voice`` (``voice_to_voice.json``) wrote. Every figure is a
median read from those files; the change is after / before - 1. Run both on the same idle
machine, back to back, so that the only difference is the code.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

Row = tuple[str, float | None, float | None]
V2V_STAGES = (
    ("end-of-turn wait", "eot_wait_ms"),
    ("recognition", "asr_ms_seen"),
    ("LLM first token", "llm_first_token_ms"),
    ("first segment", "first_segment_ms"),
    ("synthesis", "synthesis_ms"),
    ("voice to voice", "voice_to_voice_ms"),
    ("barge-in: onset to `reply.paused`", "onset_to_paused_ms"),
    ("barge-in: onset to `cancelled`", "onset_to_cancelled_ms"),
)


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def latency_rows(report: dict[str, Any]) -> Iterator[Row]:
    """First audio (median) per level, case and mode; the legs; concurrency; the transport."""
    levels = report["levels"]
    for mode, runs in levels["transport"]["runs"].items():
        yield f"transport, {mode}", _median([r["first_audio_ms"] for r in runs]), None
    for level in ("inprocess", "http"):
        for case in levels[level]:
            for mode in ("stream", "batch"):
                runs = [r for r in case["runs"] if r["mode"] == mode]
                ttfa = _median([r["ttfa_ms"] for r in runs])
                yield (
                    f"{level}, {case['case']}, {mode}",
                    ttfa,
                    _median([r["total_ms"] for r in runs]),
                )
    for leg, summary in report["legs"]["summary"].items():
        yield f"browser leg, {leg}", summary["ttfa_ms"]["median"], summary["total_ms"]["median"]
    for level in report["concurrency"]:
        yield f"{level['turns']} concurrent turns (p50)", level["ttfa_p50"], level["total_p50"]


def voice_rows(report: dict[str, Any]) -> Iterator[Row]:
    """Each stage of voice to voice (median); a figure the run did not measure (a run from
    before the reply paused on barge-in has no ``onset_to_paused_ms``) is None."""
    summary = report["summary"]
    for label, key in V2V_STAGES:
        yield label, summary[key]["median"] if key in summary else None, None


def table(before: list[Row], after: list[Row], what: str) -> list[str]:
    """A Markdown table of ``what`` before and after, with the change of each."""
    lines = [
        f"| {what} | before | after | change | total before | total after |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for (label, first, total), (label_after, first_after, total_after) in zip(
        before, after, strict=True
    ):
        if label != label_after:
            raise ValueError(f"the runs measured different things: {label!r}, {label_after!r}")
        change = "" if not first or first_after is None else f"{first_after / first - 1:+.1%}"
        cells = [_ms(first), _ms(first_after), change, _ms(total), _ms(total_after)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.0f} ms"


def markdown(before: Path, after: Path, title: str) -> str:
    """The comparison of the runs in ``before`` and ``after``."""
    parts = [f"# {title}", ""]
    latency = [json.loads((path / "agent_latency.json").read_text()) for path in (before, after)]
    machine = latency[0]["machine"]
    parts += [
        f"`voice-agent bench` in `{before.name}/` ({latency[0]['date']}) and `{after.name}/` "
        f"({latency[1]['date']}), {machine['cpu']}, {machine['cores']} cores; load average "
        f"{machine['load_average']} before, {latency[1]['machine']['load_average']} after. "
        "First audio is the median over a level's runs.",
        "",
        *table(*(list(latency_rows(report)) for report in latency), "first audio"),
        "",
    ]
    voice = [path / "voice_to_voice.json" for path in (before, after)]
    if all(path.exists() for path in voice):
        reports = [json.loads(path.read_text()) for path in voice]
        parts += [
            "`python -m bench.latency.voice_to_voice`, medians per stage:",
            "",
            *table(*(list(voice_rows(report)) for report in reports), "stage"),
            "",
        ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.latency.before_after")
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--title", default="Before and after")
    parser.add_argument("--out", type=Path, help="where to write the Markdown (default: print)")
    args = parser.parse_args(argv)
    text = markdown(args.before, args.after, args.title)
    if args.out is None:
        print(text)
    else:
        args.out.write_text(text)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
