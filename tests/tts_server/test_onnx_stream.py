"""Sentences of the split ONNX model: a voice's first whole (learning its prior), then windows."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tts_server.spectra import spectral_distance
from tts_server.engines.onnx.split import SplitKokoro
from tts_server.engines.onnx.stream import WindowedKokoro
from tts_server.engines.packaged import packaged_files
from tts_server.engines.windows import SAMPLES_PER_FRAME, WindowPlan

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.slow

FIRST = "plˈiz ɹəmˈɛmbəɹ tə bɹˈɪŋ jʊɹ ˌʌmbɹˈɛlə, bəkˈʌz ɪt mˈA ɹˈAn lˈATəɹ ðɪs ˈivnɪŋ."
SECOND = "ðə wˈɛðəɹ tədˈA ɪz sˈʌni wɪð ɐ lˈIt bɹˈiz fɹʌm ðə wˈɛst kˈOst."
PLAN = WindowPlan(first=8, size=80, context=8)


class Packaged:
    def __init__(self) -> None:
        path, self.vocab, self.voices = packaged_files()
        self.split = SplitKokoro.load(path, threads=2)

    def inputs(self, phonemes: str, voice: str) -> tuple[list[int], np.ndarray, float]:
        tokens = [self.vocab[p] for p in phonemes if p in self.vocab]
        return tokens, self.voices[voice][len(tokens) - 1], 1.0


@pytest.fixture(scope="module")
def packaged() -> Packaged:
    return Packaged()


def test_a_voice_speaks_whole_once_then_in_windows(packaged: Packaged) -> None:
    windowed = WindowedKokoro(packaged.split, PLAN)
    first = windowed.sentence(*packaged.inputs(FIRST, "jf_alpha"), voice="jf_alpha")
    assert not first.windowed
    (whole_first,) = list(first.audio)
    assert whole_first.size == int(first.durations.sum()) * SAMPLES_PER_FRAME

    tokens, style, speed = packaged.inputs(SECOND, "jf_alpha")
    second = windowed.sentence(tokens, style, speed, voice="jf_alpha")
    assert second.windowed
    chunks = list(second.audio)
    frames = int(second.durations.sum())
    plan = windowed.plan_for(second.durations)
    assert plan.first == PLAN.first + second.durations[0] > PLAN.first  # the pad's silence
    assert [c.size for c in chunks] == [w.frames * 600 for w in plan.windows(frames)]
    reference, _ = packaged.split.whole(packaged.split.text(tokens, style, speed))
    assert spectral_distance(np.concatenate(chunks), reference) < 6.5  # measured 5.5

    other_voice = windowed.sentence(*packaged.inputs(SECOND, "jm_kumo"), voice="jm_kumo")
    assert not other_voice.windowed  # another voice's statistics would ruin it


def test_stopping_a_sentence_decodes_no_further_window(packaged: Packaged) -> None:
    windowed = WindowedKokoro(packaged.split, PLAN)
    windowed.learn(
        "v", packaged.split.whole(packaged.split.text(*packaged.inputs(FIRST, "jf_alpha")))[1]
    )
    sentence = windowed.sentence(*packaged.inputs(SECOND, "jf_alpha"), voice="v")
    first = next(sentence.audio)
    sentence.audio.close()  # type: ignore[attr-defined]
    assert first.size == (PLAN.first + sentence.durations[0]) * SAMPLES_PER_FRAME
    assert next(sentence.audio, None) is None


def test_priors_of_the_least_recently_used_voices_are_dropped(packaged: Packaged) -> None:
    windowed = WindowedKokoro(packaged.split, PLAN, voices_kept=2)
    stats = {"quant0.low": np.array(-1.0, np.float32), "quant0.high": np.array(1.0, np.float32)}
    for voice in ("a", "b"):
        windowed.learn(voice, stats)
    assert windowed.prior("a") is not None  # "a" used: "b" is now the oldest
    windowed.learn("c", stats)
    assert windowed.prior("b") is None
    assert windowed.prior("a") is not None and windowed.prior("c") is not None
    with pytest.raises(ValueError, match="at least 1"):
        WindowedKokoro(packaged.split, PLAN, calibration=0)


def test_a_terminated_run_stops_the_window_being_decoded(packaged: Packaged) -> None:
    import onnxruntime as ort

    windowed = WindowedKokoro(packaged.split, PLAN)
    options = ort.RunOptions()
    sentence = windowed.sentence(*packaged.inputs(SECOND, "jf_alpha"), voice="x", options=options)
    options.terminate = True
    with pytest.raises(Exception, match="terminate"):
        next(sentence.audio)
    assert windowed.prior("x") is None  # nothing learned from a sentence never decoded
