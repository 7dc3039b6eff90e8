"""The false-interruption benchmark's parts: its noises, its levels, its backchannel rule, the
listening path it drives and its report (the full run synthesizes and recognizes)."""

from __future__ import annotations

import numpy as np
import pytest

from agent.config import ListeningConfig
from bench.speech.false_interruptions import (
    LEAD_MS,
    RATE,
    SPEECH_DBFS,
    Sound,
    active_dbfs,
    at_level,
    clip,
    espeak,
    is_backchannel,
    listened,
    markdown,
    noises,
    onset_ms,
    summary,
    trimmed,
)

CONFIG = ListeningConfig(burst_s=1e6)


def test_the_noises_are_the_same_every_run_and_each_kind_is_there() -> None:
    first, again = noises(), noises()
    assert [n.name for n in first] == [n.name for n in again]
    assert all(np.array_equal(a.samples, b.samples) for a, b in zip(first, again, strict=True))
    names = " ".join(n.name for n in first)
    for kind in ("cough", "door slam", "click train", "keyboard", "laugh"):
        assert kind in names
    assert all(np.abs(n.samples).max() <= 1 for n in first)


def test_a_sound_is_set_to_its_active_level_and_its_onset_found() -> None:
    tone = np.sin(np.arange(RATE) * 2 * np.pi * 200 / RATE)
    assert active_dbfs(at_level(tone, -30.0)) == pytest.approx(-30.0, abs=0.01)
    late = np.concatenate([np.zeros(RATE // 4), tone])
    assert onset_ms(late) == 250
    assert len(trimmed(np.concatenate([np.zeros(100), tone, np.zeros(100)]))) <= len(tone)


@pytest.mark.parametrize(
    ("text", "backchannel"),
    [
        ("Mm-hm.", True),
        ("Uh-huh.", True),
        ("Oh, I see.", True),
        ("Yeah, yeah.", True),
        ("", True),
        ("Wait, stop.", False),
        ("No.", False),
        ("I see what you mean, but no.", False),
    ],
)
def test_a_transcript_is_a_backchannel_only_if_every_word_is_one(
    text: str, backchannel: bool
) -> None:
    assert is_backchannel(text) is backchannel


def test_a_room_with_nothing_in_it_cuts_nothing() -> None:
    found = listened(CONFIG, clip(Sound("noise", "nothing", "numpy", np.zeros(RATE)), 0))
    assert found["cut_ms"] is None and found["speech_start_ms"] is None


def test_an_interruption_cuts_the_reply_within_300_ms_of_its_onset() -> None:
    words = at_level(trimmed(espeak("Wait, stop.", "en-us")), SPEECH_DBFS)
    found = listened(CONFIG, clip(Sound("interruption", "Wait, stop.", "espeak", words), 0))
    assert found["cut_ms"] is not None and found["pcm"]  # the utterance goes on to recognition
    assert 0 < found["cut_ms"] - (LEAD_MS + onset_ms(words)) <= 300


def test_the_report_counts_per_kind_and_gives_the_stop_times() -> None:
    def row(kind: str, name: str, cut: bool, stop: float | None = None) -> dict[str, object]:
        return {
            "kind": kind,
            "name": name,
            "source": "espeak en-us",
            "sound_ms": 400,
            "level_dbfs": -26.0,
            "vad_max": 0.99,
            "speech_start": True,
            "speech_end": "silence" if cut else "too_short",
            "cut": cut,
            "stop_ms": stop,
            **({"heard": "Yeah.", "heard_backchannel": True} if cut else {}),
        }

    rows = [
        row("backchannel", "Yeah.", True),
        row("backchannel", "Hmm.", False),
        row("noise", "cough", False),
        row("interruption", "Stop.", True, 240.0),
        row("interruption", "Stop.", True, 220.0),
    ]
    result = summary(rows, CONFIG, asr=True)
    assert result["kinds"]["backchannel"] == {
        "clips": 2,
        "cut": 1,
        "speech_start": 2,
        "too_short": 1,
        "heard_as_backchannel": 1,
    }
    assert result["stop_ms"] == {"median": 230.0, "p90": 240.0, "max": 240.0, "min": 220.0}
    page = markdown(result)
    assert "| backchannel | 2 | 1 | 2 | 1 | 1 |" in page
    assert "median 230.0 ms" in page and "| Yeah. | 1 | 1 | 1 |" in page
