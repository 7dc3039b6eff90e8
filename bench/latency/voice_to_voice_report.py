"""The voice-to-voice report: ``voice_to_voice.json``, its Markdown and its plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.latency.endpointing import DEFAULT, NAMES
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
    "barge_in_stop_ms": "barge-in: speech onset to `reply.paused` (the reply stops), ms (median)",
    "eot_complete_ms": "end of turn on the complete pause-corpus sentences, ms (median)",
    "transcript_ms": "end of speech to the transcript, ms (median)",
    "voice_to_voice_ms": "voice to voice, ms (median; the issue's goal once within-sentence "
    "streaming is in main too)",
    "false_cutoff_rate": "pause-corpus trials cut before their speech ended (in the pause, or in a "
    "short gap of a whole sentence), no more than the silence rule's",
    "speculative_heard": "pause-corpus trials with any reply frame before their end of turn "
    "(a speculative reply heard)",
}


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{round(value, digits) + 0.0:.{digits}f}"


def _cell(spread: dict[str, float | None], digits: int = 0) -> str:
    return f"{_fmt(spread['median'], digits)} / {_fmt(spread['p90'], digits)}"


def headline(report: dict[str, Any]) -> list[str]:
    s = report["summary"]
    cost = s["turn_model_cost_ms"]["alone"]
    return [
        *(
            f"- {NAMES[name]}: voice to voice **{_fmt(a['voice_to_voice_ms']['median'])} ms** "
            f"median (p90 {_fmt(a['voice_to_voice_ms']['p90'])}), end of turn "
            f"{_fmt(a['eot_wait_ms']['median'])} ms, end of speech to transcript "
            f"{_fmt(a['transcript_ms']['median'])} ms; pause corpus: "
            f"{a['pauses']['false_cutoffs']}/{a['pauses']['paused']} false cut-offs in the "
            f"pauses and {a['pauses']['whole_cut']}/{a['pauses']['complete']} whole sentences "
            f"(and {a['cut']}/{len(report['configs'][name]['utterances'])} questions) cut "
            f"in a short gap, end of turn {_fmt(a['pauses']['eot_ms']['median'])} ms median on "
            "the others"
            for name, a in s["ablation"].items()
        ),
        f"- the turn model: {_fmt(cost['median'], 1)} ms per decision median, "
        f"p99 {_fmt(cost['p99'], 1)} ({cost['decisions']} decisions, alone)",
        f"- all on (the defaults): {_fmt(s['overhead_ms']['median'])} ms over the sum of the "
        "floors",
        f"- recognition {_fmt(s['asr_ms']['median'])} ms median, "
        f"RTF {_fmt(s['asr_rtf']['median'], 3)}, "
        f"WER {_fmt(s['wer']['median'], 3)} median (p90 {_fmt(s['wer']['p90'], 3)})",
        f"- barge-in: onset to `reply.paused` {_fmt(s['onset_to_paused_ms']['median'])} ms median, "
        f"to `cancelled` {_fmt(s['onset_to_cancelled_ms']['median'])}",
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
        f"{setup['agent']} (one per configuration); TTS: {setup['tts']}. "
        f"{len(report['configs'][DEFAULT]['utterances'])} utterances and "
        f"{report['replayed']['sentences']} pause-corpus sentences (each whole and with its "
        "pause) said by the project's TTS, sent as 32 ms MIC frames in real time to each "
        "configuration in turn; the default listening knobs otherwise (silence "
        f"{setup['listening']['silence_ms']} ms, pause {setup['listening']['pause_ms']} ms, "
        f"turn wait {setup['listening']['turn_wait_ms']} ms, threshold "
        f"{setup['listening']['turn_threshold']}, asked again at "
        f"{setup['listening']['turn_recheck_ms']} ms with threshold "
        f"{setup['listening']['turn_recheck_threshold']}, barge-in "
        f"{setup['listening']['barge_in_ms']} ms, Whisper tiny.en int8 beam 1, "
        f"{setup['listening']['asr_threads']} threads). With the eager start, a reply begun in "
        "the wait after a pause the model called incomplete is heard only if the turn ends "
        "there; the replies withdrawn unheard are counted from each server's `/metrics`.",
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


def _median_floor(rows: list[dict[str, Any]], key: str) -> float | None:
    floors = sorted(r["floors"][key] for r in rows if r["floors"][key] is not None)
    return floors[len(floors) // 2] if floors else None


def _cutoffs(a: dict[str, Any]) -> str:
    p = a["pauses"]
    return (
        f"{p['false_cutoffs']}/{p['paused']} in the pauses, {p['whole_cut']}/{p['complete']} "
        f"whole ({_fmt(100 * (p['false_cutoff_rate'] or 0))} % of the trials)"
    )


ROWS = (
    ("**voice to voice**", lambda a: f"**{_cell(a['voice_to_voice_ms'])}**"),
    ("end of speech to transcript", lambda a: _cell(a["transcript_ms"])),
    ("sum of the floors", lambda a: _cell(a["floor_ms"])),
    ("overhead (voice to voice - floors)", lambda a: _cell(a["overhead_ms"])),
    ("pause corpus: false cut-offs", _cutoffs),
    (
        "pause corpus: end of turn on complete sentences, mean; median / p90",
        lambda a: f"{_fmt(a['pauses']['eot_mean_ms'])}; {_cell(a['pauses']['eot_ms'])}",
    ),
    (
        "pause corpus: replies withdrawn unheard; trials with reply frames before the end",
        lambda a: f"{_fmt(a.get('withdrawn'))}; {a['pauses'].get('replies_before_end', '-')}",
    ),
)


def _ablation(report: dict[str, Any]) -> list[str]:
    ablation, configs = report["summary"]["ablation"], report["configs"]
    names = list(ablation)
    lines = [
        "",
        "## The ablation (ms, median / p90; the stage's floor, median, in brackets)",
        "",
        "| | " + " | ".join(NAMES[n] for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for key, label in STAGE_NAMES.items():
        cells = (
            f"{_cell(ablation[n][key])} ({_fmt(_median_floor(configs[n]['utterances'], key))})"
            for n in names
        )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for label, cell in ROWS:
        lines.append(f"| {label} | " + " | ".join(cell(ablation[n]) for n in names) + " |")
    cuts, count = report["replayed"]["false_cutoffs"], report["replayed"]["sentences"]
    return [
        *lines,
        "",
        "Replayed offline (the socket's VAD and endpointer on the same audio, the model in "
        f"line), the paused sentences are cut by the silence rule {cuts['silence']}/{count} "
        f"times and by the turn model's rule {cuts['turn_model']}/{count} (eager recognition "
        "does not change where a turn ends).",
    ]


def _turn_model_cost(s: dict[str, Any]) -> list[str]:
    alone, live = s["turn_model_cost_ms"]["alone"], s["turn_model_cost_ms"]["live"]
    return [
        "",
        "## The turn model's cost per decision (ms)",
        "",
        "- alone (`SmartTurn.score` in the benchmark's process, on each pause of the pause "
        f"corpus replayed after the runs): median {_fmt(alone['median'], 1)}, p99 "
        f"{_fmt(alone['p99'], 1)}, {alone['decisions']} decisions",
        "- live (`turn_ms` on `speech.end`: the model's thread, waiting for it included, while "
        f"the stack ran): median {_fmt(live['median'], 1)}, p99 {_fmt(live['p99'], 1)}, "
        f"{live['decisions']} decisions",
    ]


def _per_utterance(report: dict[str, Any]) -> list[str]:
    configs = report["configs"]
    names = list(configs)
    rows = zip(*(configs[n]["utterances"] for n in names), strict=True)
    return [
        "",
        "## Per utterance (voice to voice ms per configuration; heard with all on)",
        "",
        "| said | heard | WER | speech ms | recognition ms (RTF) | "
        + " | ".join(NAMES[n] for n in names)
        + " |",
        "|---|---|---|---|---|" + "---|" * len(names),
        *(
            f"| {r[-1]['text']} | {r[-1]['heard']} | {_fmt(r[-1]['wer'], 2)} | "
            f"{_fmt(r[-1]['speech_ms'])} | {_fmt(r[-1]['asr_ms'])} ({_fmt(r[-1]['asr_rtf'], 2)})"
            " | " + " | ".join(_fmt(x["voice_to_voice_ms"]) for x in r) + " |"
            for r in rows
        ),
        "",
        "Recognition alone (the same clips, one at a time after the runs, in the benchmark's "
        "process): "
        + ", ".join(
            f"{_fmt(a['asr_ms'])} ms for {_fmt(a['audio_ms'])} ms" for a in report["asr_alone"]
        )
        + ".",
    ]


def _pause_corpus(report: dict[str, Any]) -> list[str]:
    configs = report["configs"]
    names = list(configs)
    rows = list(zip(*(configs[n]["pauses"] for n in names), strict=True))
    whole = {r[0]["text"]: r for r in rows if not r[0]["paused"]}
    header = " / ".join(NAMES[n] for n in names)
    return [
        "",
        f"## The pause corpus, per sentence ({header})",
        "",
        "| sentence | pause ms | cut in the pause | end of turn on it whole, ms |",
        "|---|---|---|---|",
        *(
            f"| {r[0]['text']} | {r[0]['pause_ms']} | "
            + " / ".join("**cut**" if x["cut_in_pause"] else "-" for x in r)
            + " | "
            + " / ".join(_fmt(x["eot_ms"]) for x in whole.get(r[0]["text"], ()))
            + " |"
            for r in rows
            if r[0]["paused"]
        ),
    ]


def _barge_in(s: dict[str, Any]) -> list[str]:
    return [
        "",
        "## Barge-in, all on (ms, median / p90)",
        "",
        f"- speech onset in the input to `reply.paused`: {_cell(s['onset_to_paused_ms'])}",
        f"- speech onset in the input to `cancelled`: {_cell(s['onset_to_cancelled_ms'])}",
        f"- speech onset to the last reply audio frame before `cancelled`: "
        f"{_cell(s['onset_to_last_reply_frame_ms'])} (negative: no reply frame arrived between "
        "the onset and `cancelled`; the reply had been sent ahead of its playback)",
        "",
        "The barge-in threshold (200 ms of speech) is in each by design. The page pauses its "
        "playback on `reply.paused`, so the reply stops there; `cancelled` comes once the words "
        "are heard not to be a backchannel, or at the interrupt bound (1000 ms of speech), and "
        "cuts the paused reply where it stopped (docs/listening.md, False interruptions).",
    ]


DEFINITIONS = (
    "- Times are the client's: when it sent the frame holding the last sample of speech "
    "(over -34 dBFS), and when each event arrived.",
    "- **end-of-turn wait**: to `speech.end`; floor: where the configuration's rule, replayed "
    "offline on the same audio through the socket's VAD and endpointer in the same 32 ms "
    "frames (the turn model scoring in line), ends the turn, plus, when the model's answer "
    "ended it at the pause, the model's own time (`turn_ms`: the socket's reader waits for "
    "it). The silence rule waits 512 ms (16 windows), the turn model 96 or 160 ms (complete "
    "at its first or second ask) or 1024 ms (incomplete), each plus the window or two that "
    "Silero's probability stays up after the last loud sample. **recognition**: `speech.end` "
    "to `transcript`; floor: the recognizer's own `asr_ms`, less, with eager recognition, the "
    "head start it had in the wait (from the model's last unfinished answer to the end of "
    "turn; none where the model ended the turn: recognition begins after its answer). "
    "**end of speech to transcript**: the two together. **LLM first token**: `transcript` to "
    "the first `text.delta`; floor: the demo model's delay. **first segment**: to the "
    "`segment` event; floor: the demo model's time to write that sentence. **synthesis**: to "
    "the first audio frame; floor: that sentence's first audio spoken alone on the same TTS "
    "server, right after.",
    "- **Pause corpus** (`bench/latency/pause_corpus.py`): sentences said by the project's "
    "TTS, each whole and with 300 to 900 ms of silence spliced in between two words (where "
    "the engine's word timings put the gap). A **false cut-off**: the first `speech.end` of a "
    "paused sentence says its speech ended before the pause did; on a whole sentence (or a "
    "question), that its speech ended before it did (a short gap in it taken for the end). "
    "**End of turn on complete sentences**: as the end-of-turn wait above, on the whole "
    "sentences not cut. Each trial is a "
    "fresh socket; the microphone stops once the speech is out and the turn has ended, and "
    "the socket closes at the transcript.",
    "- RTF: recognition time over the clip recognized (pre-roll, speech, tail); the 3 s goal "
    "reads the clips of 2.75 to 3.25 s recognized alone.",
    "- VAD cost: `VoiceActivity.windows` alone on the utterances after the runs, two windows "
    "per call; CPU is the process's.",
    "- The machine's load average is printed above: on 2 shared cores every stage that "
    "computes (recognition, synthesis, the turn model) stretches with the other jobs' load, "
    "while the waits by design (the silences, the demo model's delay) do not.",
)


def markdown(report: dict[str, Any]) -> str:
    lines = [
        *_introduction(report),
        *_goals(report["summary"]),
        *_ablation(report),
        *_turn_model_cost(report["summary"]),
        *_per_utterance(report),
        *_pause_corpus(report),
        *_barge_in(report["summary"]),
        "",
        "## Definitions",
        "",
        *DEFINITIONS,
        "",
    ]
    return "\n".join(lines)


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ablation = report["summary"]["ablation"]
    fig, ax = plt.subplots(figsize=(9, 3.5))
    labels = [NAMES[name] for name in ablation]
    left = [0.0] * len(labels)
    for key, name in STAGE_NAMES.items():
        widths = [a[key]["median"] or 0.0 for a in ablation.values()]
        ax.barh(labels, widths, left=left, label=name)
        left = [x + w for x, w in zip(left, widths, strict=True)]
    for i, a in enumerate(ablation.values()):
        ax.plot([a["voice_to_voice_ms"]["median"]] * 2, [i - 0.4, i + 0.4], color="black")
    ax.invert_yaxis()
    ax.set_xlabel("ms from the end of speech in the input: stage medians (black: voice to voice)")
    ax.set_title("Voice to voice per end-of-turn configuration")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(report: dict[str, Any], out: Path) -> list[Path]:
    """``voice_to_voice.{json,md,png}`` in ``out``."""
    return write_files(report, out, STEM, markdown, plot)
