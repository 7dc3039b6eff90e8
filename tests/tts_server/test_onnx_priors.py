"""Each voice's prior: none at its first sentence, then the calibration sentences' statistics."""

from __future__ import annotations

import numpy as np
import pytest

from tts_server.engines.onnx.priors import CALIBRATION, VoicePriors
from tts_server.engines.onnx.split import FIXED, Stats, average

STATS: Stats = {
    "quant0.low": np.array(-1.0, np.float32),
    "quant0.high": np.array(2.0, np.float32),
    "norm0.n": np.array([10.0], np.float32),
    "norm0.mean": np.full((1, 1, 1), 0.5, np.float32),
    "norm0.var": np.full((1, 1, 1), 4.0, np.float32),
}


class Calibration:
    """Counts its calls; gives the same statistics for each calibration sentence."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> list[Stats]:
        self.calls += 1
        return [STATS] * len(CALIBRATION)


def test_a_voice_is_whole_at_its_first_sentence_then_calibrated_once() -> None:
    priors, calibrate = VoicePriors(), Calibration()
    assert priors.prior("v", calibrate) is None  # its first sentence: decoded whole
    assert calibrate.calls == 0
    prior = priors.prior("v", calibrate)
    assert prior is not None and calibrate.calls == 1
    assert priors.prior("v", calibrate) is prior and calibrate.calls == 1
    pooled = average([STATS] * len(CALIBRATION))
    assert prior["norm0.n"] == pytest.approx(pooled["norm0.n"] * FIXED)  # used as it is
    assert prior["norm0.mean"] == pytest.approx(0.5) and prior["quant0.high"] == 2.0


def test_a_voice_calibrated_at_load_streams_from_its_first_sentence() -> None:
    priors, calibrate = VoicePriors(), Calibration()
    made = priors.calibrated("default", [STATS])
    assert priors.prior("default", calibrate) is made and calibrate.calls == 0


def test_priors_of_the_least_recently_used_voices_are_dropped() -> None:
    priors, calibrate = VoicePriors(voices_kept=2), Calibration()
    priors.calibrated("a", [STATS])
    priors.calibrated("b", [STATS])
    assert priors.prior("a", calibrate) is not None  # "a" used: "b" is now the oldest
    priors.calibrated("c", [STATS])
    assert priors.prior("b", calibrate) is None  # dropped: heard anew
    assert priors.prior("c", calibrate) is not None
    with pytest.raises(ValueError, match="at least 1"):
        VoicePriors(voices_kept=0)


def test_the_calibration_sentences_are_a_statement_a_question_and_clauses() -> None:
    assert [sentence[-1] for sentence in CALIBRATION] == [".", "?", "."]
    assert CALIBRATION[2].count(",") >= 2
