"""The voice-to-voice report: ``voice_to_voice.json``, its Markdown and its plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.latency.report import write_files

STEM = "voice_to_voice"
STAGE_NAMES = {
    "eot_wait_ms": "end-of-turn wait",
    "asr_ms_seen": "recognition",
    "llm_first_token_ms": "LLM first token",
    "first_segment_ms": "first segment",
    "synthesis_ms": "synthesis",
}
GOAL_NAMES = {
    "asr_rtf_3s": "recognition of a ~3 s utterance, fraction of its duration (alone)",
    "vad_ms_per_window": "VAD wall ms per 32 ms window (median)",
    "overhead_ms": "voice to voice over the sum of its stage floors, ms (median)",
    "barge_in_stop_ms": "barge-in: speech onset to `cancelled`, ms (median)",
}


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{round(value, digits) + 0.0:.{digits}f}"


def _cell(spread: dict[str, float | None], digits: int = 0) -> str:
    return f"{_fmt(spread['median'], digits)} / {_fmt(spread['p90'], digits)}"


def headline(report: dict[str, Any]) -> list[str]:
    s = report["summary"]
    return [
        f"- voice to voice **{_fmt(s['voice_to_voice_ms']['median'])} ms** median "
        f"(p90 {_fmt(s['voice_to_voice_ms']['p90'])}), "
        f"{_fmt(s['overhead_ms']['median'])} ms over the sum of its floors",
        f"- recognition {_fmt(s['asr_ms']['median'])} ms median, "
        f"RTF {_fmt(s['asr_rtf']['median'], 3)}, "
        f"WER {_fmt(s['wer']['median'], 3)} median (p90 {_fmt(s['wer']['p90'], 3)})",
        f"- barge-in: onset to `cancelled` {_fmt(s['onset_to_cancelled_ms']['median'])} ms median",
        f"- VAD {_fmt(report['vad']['wall_ms']['median'], 3)} ms wall, "
        f"{_fmt(report['vad']['cpu_ms'], 3)} ms CPU per 32 ms window",
    ]


def _shared_note(machine: dict[str, Any]) -> str:
    busiest = max(machine["load_average"][0], machine["load_average_at_end"][0])
    if busiest <= machine["cores"] / 2 + 0.5:  # the benchmark's own work, about a core
        return ""
    return " (other jobs shared the machine: the figures carry their noise)"


def _introduction(report: dict[str, Any]) -> list[str]:
    m, setup = report["machine"], report["setup"]
    return [
        "# Voice to voice",
        "",
        f"`python -m bench.latency.voice_to_voice`, {report['date']}. {m['cpu']}, "
        f"{m['cores']} cores, "
        f"load average {m['load_average'][0]} at the start and "
        f"{m['load_average_at_end'][0]} at the end{_shared_note(m)}. "
        f"{setup['agent']}; TTS: {setup['tts']}. {len(report['utterances'])} utterances said "
        "by the project's TTS, sent as 32 ms MIC frames in real time; default listening knobs "
        f"(silence {setup['listening']['silence_ms']} ms, barge-in "
        f"{setup['listening']['barge_in_ms']} ms, Whisper tiny.en int8 beam 1, "
        f"{setup['listening']['asr_threads']} threads).",
        "",
        *headline(report),
    ]


def _goals(s: dict[str, Any]) -> list[str]:
    return [
        "",
        "## Goals",
        "",
        "| goal | target | measured | met |",
        "|---|---|---|---|",
        *(
            f"| {GOAL_NAMES[name]} | {g['goal']} | {_fmt(g['measured'], 3)} | "
            f"{'yes' if g['met'] else '**no**'} |"
            for name, g in s["goals"].items()
        ),
    ]


def _stages(report: dict[str, Any]) -> list[str]:
    s, rows = report["summary"], report["utterances"]
    lines = [
        "",
        "## Voice to voice and its stages (ms, median / p90)",
        "",
        "| stage | measured | floor (median) |",
        "|---|---|---|",
    ]
    for key, name in STAGE_NAMES.items():
        floors = sorted(r["floors"][key] for r in rows if r["floors"][key] is not None)
        floor = floors[len(floors) // 2] if floors else None
        lines.append(f"| {name} | {_cell(s[key])} | {_fmt(floor)} |")
    return [
        *lines,
        f"| **voice to voice** | **{_cell(s['voice_to_voice_ms'])}** | {_cell(s['floor_ms'])} |",
        f"| overhead (voice to voice - floors) | {_cell(s['overhead_ms'])} | |",
    ]


def _per_utterance(report: dict[str, Any]) -> list[str]:
    return [
        "",
        "## Per utterance",
        "",
        "| said | heard | WER | speech ms | recognition ms (RTF) | voice to voice ms |",
        "|---|---|---|---|---|---|",
        *(
            f"| {r['text']} | {r['heard']} | {_fmt(r['wer'], 2)} | {_fmt(r['speech_ms'])} | "
            f"{_fmt(r['asr_ms'])} ({_fmt(r['asr_rtf'], 2)}) | {_fmt(r['voice_to_voice_ms'])} |"
            for r in report["utterances"]
        ),
        "",
        "Recognition alone (the same clips, one at a time after the runs, in the benchmark's "
        "process): "
        + ", ".join(
            f"{_fmt(a['asr_ms'])} ms for {_fmt(a['audio_ms'])} ms" for a in report["asr_alone"]
        )
        + ".",
    ]


def _barge_in(s: dict[str, Any]) -> list[str]:
    return [
        "",
        "## Barge-in (ms, median / p90)",
        "",
        f"- speech onset in the input to `cancelled`: {_cell(s['onset_to_cancelled_ms'])}",
        f"- speech onset to the last reply audio frame before it: "
        f"{_cell(s['onset_to_last_reply_frame_ms'])} (negative: no reply frame arrived between "
        "the onset and `cancelled`; the reply had been sent ahead of its playback)",
        "",
        "The barge-in threshold (200 ms of speech) is in both by design; the page stops its "
        "playback on `cancelled`, so the reply is silenced when `cancelled` arrives.",
    ]


def _definitions(rows: list[dict[str, Any]]) -> list[str]:
    return [
        "",
        "## Definitions",
        "",
        "- Times are the client's: when it sent the frame holding the last sample of speech "
        "(over -34 dBFS), and when each event arrived.",
        "- **end-of-turn wait**: to `speech.end`; floor: where the VAD and endpointer alone, fed "
        "the same audio at once in the same 32 ms frames, end the turn (the designed silence, "
        f"{_fmt(rows[0]['designed_silence_ms'])} ms in whole windows, plus the window or two "
        "that Silero's probability stays up after the last loud sample). **recognition**: "
        "`speech.end` to `transcript`; floor: the recognizer's "
        "own `asr_ms`. **LLM first token**: `transcript` to the first `text.delta`; floor: the "
        "demo model's delay. **first segment**: to the `segment` event; floor: the demo "
        "model's time to write that sentence. **synthesis**: to the first audio frame; floor: "
        "that sentence's first audio spoken alone on the same TTS server, right after.",
        "- RTF: recognition time over the clip recognized (pre-roll, speech, tail); the 3 s goal "
        "reads the clips of 2.75 to 3.25 s recognized alone.",
        "- VAD cost: `VoiceActivity.windows` alone on the utterances after the runs, two "
        "windows per call; CPU is the process's.",
        "- The machine's load average is printed above: on 2 shared cores every stage that "
        "computes (recognition, synthesis) stretches with the other jobs' load, while the "
        "waits by design (end of turn, the demo model's delay) do not.",
        "",
    ]


def markdown(report: dict[str, Any]) -> str:
    lines = [
        *_introduction(report),
        *_goals(report["summary"]),
        *_stages(report),
        *_per_utterance(report),
        *_barge_in(report["summary"]),
        *_definitions(report["utterances"]),
    ]
    return "\n".join(lines)


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["utterances"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    left = [0.0] * len(rows)
    labels = [f"{i + 1}: {r['text'][:28]}" for i, r in enumerate(rows)]
    for key, name in STAGE_NAMES.items():
        widths = [r[key] or 0.0 for r in rows]
        ax.barh(labels, widths, left=left, label=name)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    for i, r in enumerate(rows):
        if r["floor_ms"] is not None:
            ax.plot([r["floor_ms"]] * 2, [i - 0.4, i + 0.4], color="black", linewidth=1.5)
    ax.invert_yaxis()
    ax.set_xlabel("ms from the end of speech in the input (black: sum of the stage floors)")
    ax.set_title("Voice to voice: end of the user's speech to the first reply audio")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(report: dict[str, Any], out: Path) -> list[Path]:
    """``voice_to_voice.{json,md,png}`` in ``out``."""
    return write_files(report, out, STEM, markdown, plot)
