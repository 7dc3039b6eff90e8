"""The turn sweep's report: its JSON as measured, and a Markdown page with every setting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.latency.voice_to_voice import UTTERANCES
from bench.page.run import commit


def ms(spread: dict[str, Any], mean: float | None) -> str:
    """A delay's median (mean), or a dash where every utterance was cut."""
    return "-" if mean is None else f"{spread['median']:.0f} ms ({mean:.0f})"


def table(report: dict[str, Any]) -> list[str]:
    """The Markdown table of every setting, the default's row in bold."""
    lines = [
        "| setting | false cut-offs in the pauses (of "
        f"{report['paused']}) | complete utterances cut before their end (of "
        f"{report['complete']}) | end of turn, median (mean) | ended by the model (of them the "
        f"{len(UTTERANCES)} questions) | the model's asks per utterance | people's utterances "
        f"cut before their end (of {len(report['human'])}) | people: end of turn, median "
        "(mean) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in report["rows"]:
        cells = [
            row["setting"] + (" (the default)" if row["default"] else ""),
            row["false_cutoffs"],
            row["whole_cut"],
            ms(row["eot_ms"], row["eot_mean_ms"]),
            f"{row['ended_by_model']} ({row['questions_by_model']})" if row["pause_ms"] else "-",
            row["asked_per_utterance"] if row["pause_ms"] else "-",
            row["human_cut"],
            ms(row["human_eot_ms"], row["human_eot_mean_ms"]),
        ]
        bold = "**{}**" if row["default"] else "{}"
        lines.append("| " + " | ".join(bold.format(cell) for cell in cells) + " |")
    return lines


def people(report: dict[str, Any]) -> list[str]:
    """The recorded utterances, and how many settings cut each before its end."""
    cuts = [clip for row in report["rows"] for clip in row["human_cut_clips"]]
    default = next((row for row in report["rows"] if row["default"]), None)
    lines = [
        "| clip | speaker | words | seconds | settings that cut it (of "
        f"{len(report['rows'])}) | cut at the default |",
        "|---|---|---|---:|---:|---|",
    ]
    for clip in report["human"]:
        at_default = default is not None and clip["name"] in default["human_cut_clips"]
        lines.append(
            f"| {clip['name']} | {clip['speaker']} | {clip['text']} | {clip['seconds']} "
            f"| {cuts.count(clip['name'])} | {'yes' if at_default else 'no'} |"
        )
    return lines


def page(report: dict[str, Any]) -> list[str]:
    """The Markdown page: provenance, corpora, the settings' table and the people."""
    model, host = report["model_ms"], report["machine"]
    return [
        "# The turn model's pauses and thresholds, swept offline",
        "",
        f"{report['date']}, commit {report['commit']}, {host['cores']} cores, load average "
        f"{host['load_average'][0]} at the start and {report['load_average_end'][0]} at the "
        f"end. `python -m bench.latency.turn_sweep`.",
        "",
        f"{report['paused']} sentences of the pause corpus with their pause (300-900 ms), for the "
        f"false cut-offs; {report['complete']} complete utterances (the same sentences whole and "
        "the voice-to-voice questions), said by the project's TTS, and "
        f"{len(report['human'])} utterances of recorded people "
        "(`bench.speech.human_speech`, each one whole utterance with its speaker's own pauses), "
        "for the cuts before the end and the end-of-turn delay: the frames of silence waited "
        "after the last loud one, plus the model's median time per decision in this run "
        f"({model['median']:.1f} ms, p90 {model['p90']:.1f}, {report['decisions']} distinct "
        "decisions) where its `complete` ended the turn. The live delay adds the frames' "
        "delivery. A delay is over the utterances the setting did not cut.",
        "",
        "A setting is the pause the model is asked at and the score that ends the turn there; "
        "with `again at`, a pause it called unfinished is asked about once more at that silence, "
        "where the second threshold ends the turn. Ended by the model: the complete utterances "
        "whose turn the model's answer ended (not the wait), and in brackets how many of those "
        "are the voice-to-voice questions, whose transcript waits on it.",
        "",
        *table(report),
        "",
        "## The people's utterances",
        "",
        *people(report),
        "",
    ]


def write(report: dict[str, Any], out: Path, stem: str) -> list[Path]:
    """``stem``.json and ``stem``.md in ``out``, with the commit measured."""
    report = {**report, "commit": commit()}
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / f"{stem}.json", out / f"{stem}.md"
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    md_path.write_text("\n".join(page(report)))
    return [json_path, md_path]
