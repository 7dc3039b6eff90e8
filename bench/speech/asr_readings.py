"""``python -m bench.speech.asr_readings``: one reading, four, or more only where unsure?

    python -m bench.speech.asr_readings    # docs/benchmarks/asr_readings.{json,md}
    python -m bench.speech.asr_readings --clips 2 --out /tmp/readings   # a quick look

The page-hearing corpus (``page_hearing.CORPUS``: eSpeak NG voices, soft and slow starts), no
Chromium: each clip, with ``LEADS_MS`` more silence before it, is cut by the socket's own VAD
and endpointer (``VoiceActivity``, ``Endpointer``, the silence rule: the pre-roll falls where
the VAD's 32 ms windows put it), and its tail trimmed to each of ``TAILS_MS`` (the turn model
ends a turn at a 96 or 160 ms pause, the silence rule keeps 256 ms): the edges move by tens of
ms, as the page's capture moves them. Each utterance is recognized by every rule of ``RULES``
on the fitted window, one after the other (the order turns from utterance to utterance), each
timed; where the fitted window doubts every reading, faster-whisper's whole window decides, as
in the recognizer. Besides, all four phases are read in one batch, untimed, and the rules'
thresholds swept on those readings (``sweep``), and the surest reading kept with and without
the rule that sets a looping reading back (``looping``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from agent.browser_leg import MIC_SAMPLE_RATE
from agent.config import ListeningConfig
from agent.listening.endpointer import TAIL_MS, Ended, Endpointer
from agent.listening.fitted_window import (
    ENCODER_FRAME_S,
    LOOP_WORDS,
    fitted,
    loops,
    read,
    settled,
    surest,
    window_frames,
)
from agent.listening.vad import VoiceActivity
from agent.listening.whisper import default_model_path, whole_window
from bench.speech.asr_voices import score
from bench.speech.page_hearing import CORPUS, LEAD_MS, spoken
from tts_protocol import pcm16_to_float

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
LEADS_MS = (0, 9, 17, 26)  # more silence before the clip: where the VAD's windows fall
TAILS_MS = (96, 160, 256)  # silence kept after the speech
AFTER_MS = 1000  # silence after the clip: the silence rule ends the turn in it
PHASES = 4
RULES: dict[str, dict[str, Any]] = {  # fitted()'s keywords
    "one": {"phases": 1},
    "four": {"phases": PHASES},
    "sure_0.74": {"phases": PHASES, "first": 1, "sure": 0.74},  # avg log-prob -0.3
    "agree_2": {"phases": PHASES, "first": 2, "sure": 0.0},
}
SWEEP_SURE = (0.0, 0.55, 0.6, 0.65, 0.7, 0.74, 0.78, 0.82, 0.86)


class Counted:
    """tiny.en that counts its decoder's batches (``batches``): the encoder, features and
    tokenizer are the model's own."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.feature_extractor = real.feature_extractor
        self.hf_tokenizer = real.hf_tokenizer
        self.encode = real.encode
        self.transcribe = real.transcribe
        self.batches: list[int] = []
        self.model = SimpleNamespace(
            is_multilingual=real.model.is_multilingual, generate=self._generate
        )

    def _generate(self, encoded: Any, prompts: list[list[int]], **options: Any) -> Any:
        self.batches.append(len(prompts))
        return self._real.model.generate(encoded, prompts, **options)


def utterances(speech: bytes, config: ListeningConfig) -> list[tuple[int, int, bytes]]:
    """The utterances the socket's VAD and endpointer cut from ``speech`` after each lead,
    each trimmed to each tail: (lead ms, tail ms, PCM)."""
    cut = []
    for lead in LEADS_MS:
        vad, endpointer = VoiceActivity(), Endpointer(config)
        pcm = bytes((LEAD_MS + lead) * 32) + speech + bytes(AFTER_MS * 32)
        ended = [
            event
            for window, probability in vad.windows(pcm)
            for event in endpointer.push(window, probability)
            if isinstance(event, Ended)
        ]
        for tail in TAILS_MS:
            cut += [(lead, tail, e.pcm[: len(e.pcm) - (TAIL_MS - tail) * 32]) for e in ended]
    return cut


def recognized(model: Counted, audio: np.ndarray, rule: dict[str, Any]) -> dict[str, Any]:
    """``audio`` by ``rule``, timed: the text, ms, readings and whether the whole window
    decided."""
    before = len(model.batches)
    started = time.perf_counter()
    text = fitted(model, audio, MIC_SAMPLE_RATE, ListeningConfig().asr_context_s, **rule)  # type: ignore[arg-type]
    whole = text is None
    if text is None:
        text = whole_window(model, audio)  # type: ignore[arg-type]
    ms = (time.perf_counter() - started) * 1000
    return {
        "text": text,
        "ms": round(ms, 1),
        "readings": sum(model.batches[before:]),
        "whole_window": whole,
    }


def phase_readings(model: Counted, audio: np.ndarray) -> list[list[Any] | None]:
    """All ``PHASES`` read in one batch: each reading's average log-probability and text."""
    context_s = ListeningConfig().asr_context_s
    delays = [round(MIC_SAMPLE_RATE * ENCODER_FRAME_S * n / PHASES) for n in range(PHASES)]
    frames = window_frames(audio.size + delays[-1], MIC_SAMPLE_RATE, context_s)
    assert frames is not None  # the corpus is short
    return [
        None if r is None else [r[0], r[1]]
        for r in read(model, audio, MIC_SAMPLE_RATE, frames, delays)  # type: ignore[arg-type]
    ]


def kept(row: dict[str, Any], first: int, sure: float) -> tuple[list[tuple[float, str]], bool]:
    """The readings of ``row``'s four phases that the rule keeps (``first`` of them, or all
    where those are not ``settled``; none that Whisper doubts), and whether it read again."""
    phases = [None if r is None else (r[0], r[1]) for r in row["phases"]]
    firsts = [phases[round(n * PHASES / first)] for n in range(first)]
    again = not settled(firsts, sure)
    return [r for r in (phases if again else firsts) if r is not None], again


def sweep(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each rule at each threshold, on the readings of all four phases: WER (the whole
    window's text where no reading passes) and how many utterances read more."""
    out = []
    for first in (1, 2):
        for sure in SWEEP_SURE:
            wers, more = [], 0
            for row in rows:
                readings, again = kept(row, first, sure)
                more += again
                heard = surest(readings) if readings else row["rules"]["four"]["text"]
                wers.append(score(row["text"], heard)["wer"])
            out.append(
                {
                    "first": first,
                    "sure": sure,
                    "wer_mean": round(statistics.fmean(wers), 4),
                    "read_more": more,
                }
            )
    return out


def looping(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How many phase readings loop and, for each rule of several phases on those readings,
    the WER with the surest of the readings it keeps (``before``) and with a looping one set
    back (``after``), the transcripts that changed, and each clip's WER where any did."""
    out: dict[str, Any] = {
        "readings": sum(r is not None for row in rows for r in row["phases"]),
        "looping": sum(r is not None and loops(r[1]) for row in rows for r in row["phases"]),
        "rules": {},
    }
    for name, rule in RULES.items():
        if rule["phases"] != PHASES:
            continue
        clips: dict[str, list[tuple[float, float]]] = {}
        changed = 0
        for row in rows:
            readings, _ = kept(row, rule.get("first", PHASES), rule.get("sure", 0.0))
            whole = row["rules"]["four"]["text"]  # no reading passes: the whole window's
            before, after = (max(readings)[1], surest(readings)) if readings else (whole, whole)
            changed += before != after
            wers = (score(row["text"], before)["wer"], score(row["text"], after)["wer"])
            clips.setdefault(row["clip"], []).append(wers)
        pairs = [pair for wers in clips.values() for pair in wers]
        out["rules"][name] = {
            "wer_before": round(statistics.fmean(b for b, _ in pairs), 4),
            "wer_after": round(statistics.fmean(a for _, a in pairs), 4),
            "changed": changed,
            "clips": {
                clip: [round(statistics.fmean(p[n] for p in wers), 3) for n in (0, 1)]
                for clip, wers in clips.items()
                if any(b != a for b, a in wers)
            },
        }
    return out


def looping_lines(result: dict[str, Any]) -> list[str]:
    """``looping``'s figures as the report's last section."""
    lines = [
        "",
        f"Looping readings: {result['looping']} of the {result['readings']} phase readings "
        "Whisper kept loop (words said again straight after themselves, "
        f"{LOOP_WORDS} or more: `fitted_window.loops`). On the four phases' readings, the "
        "surest of those a rule keeps (before) against the surest that does not loop, or the "
        "surest collapsed where all do (after, the recognizer's rule):",
        "",
        "| rule | WER before | WER after | transcripts changed |",
        "|---|---:|---:|---:|",
    ]
    rules = result["rules"]
    lines += [
        f"| {name} | {r['wer_before']:.4f} | {r['wer_after']:.4f} | {r['changed']} |"
        for name, r in rules.items()
    ]
    clips = list(dict.fromkeys(clip for r in rules.values() for clip in r["clips"]))
    if clips:
        lines += ["", f"| clip, WER before → after | {' | '.join(rules)} |"]
        lines.append("|---|" + "---:|" * len(rules))
        for clip in clips:
            cells = [
                "{:.3f} → {:.3f}".format(*r["clips"][clip]) if clip in r["clips"] else "same"
                for r in rules.values()
            ]
            lines.append(f"| {clip} | {' | '.join(cells)} |")
    return lines


def run(clips: int) -> dict[str, Any]:
    from faster_whisper import WhisperModel

    config = ListeningConfig()
    model = Counted(
        WhisperModel(
            config.asr_model or default_model_path(),
            device="cpu",
            compute_type="int8",
            cpu_threads=config.asr_threads,
            local_files_only=True,
        )
    )
    names = list(RULES)
    load = [round(x, 2) for x in os.getloadavg()]
    rows = []
    for clip in CORPUS[:clips]:
        for lead, tail, pcm in utterances(spoken(clip), config):
            audio = pcm16_to_float(pcm)
            turn = len(rows) % len(names)
            order = names[turn:] + names[:turn]
            heard = {name: recognized(model, audio, RULES[name]) for name in order}
            for result in heard.values():
                result["wer"] = score(clip.text, result["text"])["wer"]
            rows.append(
                {
                    "clip": clip.name,
                    "text": clip.text,
                    "lead_ms": lead,
                    "tail_ms": tail,
                    "audio_ms": round(len(pcm) / 32),
                    "rules": {name: heard[name] for name in names},
                    "phases": phase_readings(model, audio),
                }
            )
        print(f"{clip.name}: {len(rows)} utterances so far", flush=True)
    return report(rows, load)


def report(rows: list[dict[str, Any]], load: list[float]) -> dict[str, Any]:
    rules = {}
    for name in RULES:
        first = RULES[name].get("first")
        results = [row["rules"][name] for row in rows]
        ms = [r["ms"] for r in results]
        rules[name] = {
            **RULES[name],
            "wer_mean": round(statistics.fmean(r["wer"] for r in results), 4),
            "median_ms": round(statistics.median(ms), 1),
            "mean_ms": round(statistics.fmean(ms), 1),
            "p90_ms": round(float(np.percentile(ms, 90)), 1),
            "read_more": sum(first is not None and r["readings"] > first for r in results),
            "readings_mean": round(statistics.fmean(r["readings"] for r in results), 2),
            "whole_window": sum(r["whole_window"] for r in results),
        }
    return {
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "load_average": {"start": load, "end": [round(x, 2) for x in os.getloadavg()]},
        "utterances": len(rows),
        "clips": len({row["clip"] for row in rows}),
        "leads_ms": LEADS_MS,
        "tails_ms": TAILS_MS,
        "rules": rules,
        "sweep": sweep(rows),
        "looping": looping(rows),
        "rows": rows,
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# One reading, four, or more only where unsure",
        "",
        f"{result['when']}, load average {result['load_average']['start']} at the start, "
        f"{result['load_average']['end']} at the end: `python -m bench.speech.asr_readings`. "
        f"{result['utterances']} utterances: the {result['clips']} clips of the page-hearing "
        f"corpus, each after {', '.join(map(str, result['leads_ms']))} ms more silence, cut by "
        "the socket's VAD and endpointer, the silence after the speech trimmed to "
        f"{', '.join(map(str, result['tails_ms']))} ms. Whisper tiny.en int8 on the fitted "
        "window, 2 threads, the rules one after the other on each utterance.",
        "",
        "| rule | WER mean | read more | readings per utterance | median ms | mean ms | p90 ms"
        " | whole window |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in result["rules"].items():
        lines.append(
            f"| {name} | {r['wer_mean']:.4f} | {r['read_more']} | {r['readings_mean']} | "
            f"{r['median_ms']} | {r['mean_ms']} | {r['p90_ms']} | {r['whole_window']} |"
        )
    names = list(result["rules"])
    lines += [
        "",
        "Per clip: WER mean over its utterances (and, for a rule that reads more only where "
        "unsure, how many of them read more).",
        "",
        f"| clip | {' | '.join(names)} |",
        "|---|" + "---:|" * len(names),
    ]
    for clip in dict.fromkeys(row["clip"] for row in result["rows"]):
        rows = [row for row in result["rows"] if row["clip"] == clip]
        cells = []
        for name in names:
            wer = statistics.fmean(row["rules"][name]["wer"] for row in rows)
            first = result["rules"][name].get("first")
            more = sum(first is not None and r["rules"][name]["readings"] > first for r in rows)
            cells.append(f"{wer:.3f}" + (f" ({more})" if first is not None else ""))
        lines.append(f"| {clip} | {' | '.join(cells)} |")
    lines += [
        "",
        "The thresholds swept on the four phases' readings of each utterance (read in one "
        "batch): `first` readings first (phase 0; or phases 0 and 2, 10 ms apart), kept alone "
        "where they agree and the surest's mean token probability is at least `sure`.",
        "",
        "| first | sure | WER mean | read more |",
        "|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {s['first']} | {s['sure']} | {s['wer_mean']:.4f} | {s['read_more']} |"
        for s in result["sweep"]
    ]
    lines += looping_lines(result["looping"])
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clips", type=int, default=len(CORPUS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    result = run(args.clips)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "asr_readings.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "asr_readings.md").write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
