"""The partial-transcript benchmark: its prefix rule, its figures and a one-utterance run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.speech.partial_transcript import main, markdown, report, stable


def row(final_ms: float, helped_ms: float, wer: float) -> dict[str, object]:
    return {
        "final_ms": final_ms,
        "final_encoder_ms": final_ms - 30,
        "final_decoder_ms": 30.0,
        "with_partials_ms": helped_ms,
        "with_partials_decoder_ms": helped_ms - (final_ms - 30),
        "partials_ms_per_s": 240.0,
        "final_wer": 0.0,
        "with_partials_wer": wer,
    }


def test_a_partial_gives_all_its_words_but_the_last_as_the_prefix() -> None:
    assert stable("What is the weather like in") == "What is the weather like"
    assert stable("What") == ""
    assert stable("") == ""


def test_the_report_compares_the_medians_and_says_what_was_saved() -> None:
    result = report([row(120, 110, 0.0), row(100, 100, 0.2), row(140, 120, 0.1)], 500)
    assert (result["final_ms"], result["with_partials_ms"], result["saved_ms"]) == (120, 110, 10)
    assert result["with_partials_wer"] == 0.1 and result["final_wer"] == 0.0
    page = markdown(result)
    assert "| final recognition | 120 ms | 110 ms |" in page
    assert (
        "240 ms per second of speech (Whisper's 2 threads busy 24 % of the time the user speaks)"
        in page
    )
    assert "Saved at the end of the turn: **10 ms** median." in page


@pytest.mark.slow  # the project's TTS says the sentences, Whisper hears one
def test_a_one_utterance_run_writes_the_json_and_the_page(tmp_path: Path) -> None:
    assert main(["--limit", "1", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "partial_transcript.json").read_text())
    [only] = result["rows"]
    assert only["text"] == "What is the weather like in London today?"
    assert only["partials"] >= 3 and only["prefix"] and only["final_wer"] <= 0.2
    assert only["with_partials"].startswith(only["prefix"])
    assert (tmp_path / "partial_transcript.md").read_text().startswith("# A partial transcript")
