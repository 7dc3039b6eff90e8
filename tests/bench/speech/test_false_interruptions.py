"""The false-interruption benchmark's parts: its noises, its levels, its backchannel rule, the
listening path it drives and its report (the full run synthesizes and recognizes)."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pytest

from agent.config import ListeningConfig
from agent.listening.recognizer import Recognition
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
    assert is_backchannel(text, CONFIG) is backchannel


def test_a_room_with_nothing_in_it_pauses_nothing() -> None:
    found = listened(CONFIG, clip(Sound("noise", "nothing", "numpy", np.zeros(RATE)), 0))
    assert found["pause_ms"] is None and found["cut_ms"] is None
    assert found["speech_start_ms"] is None


class Hears:
    """A recognizer that hears ``text`` in ``seconds``."""

    queue_depth = 0

    def __init__(self, text: str, seconds: float = 0.0) -> None:
        self.text, self.seconds = text, seconds
        self.murmurs: list[bool] = []  # each recognition's flag: over a paused reply

    async def load(self) -> None:
        return None

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        self.murmurs.append(murmurs)
        await asyncio.sleep(self.seconds)  # the socket's reader waits for it
        return Recognition(self.text, self.seconds * 1000)


def spoken_clip(text: str) -> np.ndarray:
    words = at_level(trimmed(espeak(text, "en-us")), SPEECH_DBFS)
    return clip(Sound("interruption", text, "espeak", words), 0)


@pytest.fixture(scope="module")
def short() -> np.ndarray:
    """Said for 300-900 ms: over the barge-in time, under the interrupt bound."""
    return spoken_clip("Okay.")


def test_words_pause_the_reply_within_300_ms_of_their_onset_and_then_cut_it(
    short: np.ndarray,
) -> None:
    found = listened(CONFIG, short, recognizer=Hears("No, stop."))
    onset = LEAD_MS + onset_ms(short[LEAD_MS * RATE // 1000 :])
    assert 0 < found["pause_ms"] - onset <= 300
    assert found["cut_by"] == "words" and found["cut_ms"] > found["pause_ms"]
    assert found["prompt"] == "No, stop." and found["resumed_ms"] is None


def test_backchannel_words_resume_the_reply_and_none_by_the_bound_resumes_it_there(
    short: np.ndarray,
) -> None:
    found = listened(CONFIG, short, recognizer=Hears("Okay."))
    assert found["resumed_by"] == "words" and found["cut_ms"] is None and found["prompt"] is None
    slow = listened(CONFIG, short, recognizer=Hears("Okay.", seconds=1.6))
    assert slow["resumed_by"] == "resume_ms"
    assert slow["resumed_ms"] - slow["pause_ms"] == pytest.approx(1500, abs=20)  # not at 1.6 s
    late_words = listened(CONFIG, short, recognizer=Hears("Stop it.", seconds=1.6))
    assert late_words["cut_by"] == "words" and late_words["resumed_ms"] is None


def test_the_words_over_the_paused_reply_are_recognized_as_ones_that_may_murmur(
    short: np.ndarray,
) -> None:
    """As the socket asks (``Recognize.murmurs``): a murmur Whisper is unsure of may be read as
    one, and its reading again is timed with the rest of the recognition."""
    hears = Hears("Mm-hmm.", seconds=0.05)
    found = listened(CONFIG, short, recognizer=hears)
    assert hears.murmurs == [True] and found["resumed_by"] == "words"
    assert found["asr_ms"] == 50.0


def test_speech_past_the_interrupt_bound_cuts_before_its_words() -> None:
    found = listened(CONFIG, spoken_clip("Wait, stop, that is not what I asked."))
    assert found["cut_by"] == "interrupt_ms" and found["heard"] is None
    assert 700 <= found["cut_ms"] - found["pause_ms"] <= 1500  # 800 ms more of speech


def test_without_a_recognizer_only_the_pause_is_known(short: np.ndarray) -> None:
    found = listened(CONFIG, short)
    assert found["pause_ms"] is not None and found["pcm"] and found["heard"] is None
    assert found["cut_ms"] is None and found["resumed_ms"] is None


def test_the_report_counts_per_kind_and_gives_the_stop_times() -> None:
    def row(
        kind: str, name: str, outcome: str | None, stop: float | None = None
    ) -> dict[str, object]:
        return {
            "kind": kind,
            "name": name,
            "source": "espeak en-us",
            "sound_ms": 400,
            "level_dbfs": -26.0,
            "vad_max": 0.99,
            "speech_start": True,
            "speech_end": "silence" if outcome else "too_short",
            "paused": outcome is not None,
            "stop_ms": stop,
            "cut": outcome == "cut",
            "cut_by": "words" if outcome == "cut" else None,
            "cut_ms": 900.0 if outcome == "cut" else None,
            "resumed": outcome == "resumed",
            "resumed_by": "words" if outcome == "resumed" else None,
            "silent_ms": 700.0 if outcome == "resumed" else None,
            **({"heard": "Yeah.", "heard_backchannel": outcome == "resumed"} if outcome else {}),
        }

    rows = [
        row("backchannel", "Yeah.", "resumed", 230.0),
        row("backchannel", "Hmm.", None),
        row("noise", "cough", None),
        row("interruption", "Stop.", "cut", 240.0),
        row("interruption", "Stop.", "cut", 220.0),
    ]
    result = summary(rows, CONFIG, asr=True)
    assert result["kinds"]["backchannel"] == {
        "clips": 2,
        "speech_start": 2,
        "too_short": 1,
        "paused": 1,
        "cut": 0,
        "cut_at_interrupt_ms": 0,
        "resumed": 1,
        "resumed_at_resume_ms": 0,
        "heard_as_backchannel": 1,
    }
    assert result["stop_ms"] == {"median": 230.0, "p90": 240.0, "max": 240.0, "min": 220.0}
    assert result["silent_ms"] == {"median": 700.0, "p90": 700.0, "max": 700.0, "min": 700.0}
    page = markdown(result)
    assert "| backchannel | 2 | 2 | 1 | 1 | 0 (0) | 1 (0) | 1 |" in page
    assert "median 230.0 ms" in page and "| Yeah. | 1 | 1 | 0 | 1 |" in page
    assert "after the murmur prompt: on (`VOICE_AGENT_ASR_MURMURS`)" in page
    off = summary(rows, dataclasses.replace(CONFIG, asr_murmurs=False), asr=True)
    assert "after the murmur prompt: off (`--no-murmurs`)" in markdown(off)
