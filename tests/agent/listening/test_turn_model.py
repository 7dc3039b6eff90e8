"""Smart Turn v3.2 behind the TurnModel interface, on the project's own speech."""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from agent.listening import turn_model
from agent.listening.turn_model import (
    WINDOW_SAMPLES,
    SmartTurn,
    TurnJudge,
    TurnModel,
    TurnModelError,
    TurnModelUnavailable,
    model_input,
    shared_smart_turn,
    smart_turn_path,
)
from tests.agent.listening.speech import silence, spoken, to_pcm
from tts_server.engines import Engine

# Each question and where its audio is cut mid-sentence (a fraction of its length): the words
# before the cut still sound unfinished (cut at a word that ends a phrase, the model may
# rightly hear a whole question: "How far is the moon").
QUESTIONS = {
    "What is the capital of France?": 0.5,
    "How far is the moon from the earth?": 0.4,
    "Can you tell me what the weather will be like tomorrow?": 0.5,
    "Could you book a table for four people tonight?": 0.6,
}
PAUSE = silence(224)  # what the endpointer has heard when it asks: 7 quiet windows


@pytest.fixture(scope="module")
def smart_turn() -> SmartTurn:
    model = SmartTurn()
    model.load()
    return model


@pytest.fixture(scope="module")
def questions(whole_engine: Engine) -> dict[str, bytes]:
    """The questions as the model says them whole: the turn model judges a voice's prosody, and
    the windowed decoder's small spectral differences moved its scores of these four by up to
    0.6 (0.86 to 0.27 for a complete question), though Whisper hears them alike."""
    return {text: spoken(whole_engine, text) for text in QUESTIONS}


def test_smart_turn_is_a_turn_model() -> None:
    model: TurnModel = SmartTurn()
    assert isinstance(model, SmartTurn)


@pytest.mark.parametrize("text", QUESTIONS)
def test_a_complete_question_scores_complete_and_the_same_cut_midway_does_not(
    smart_turn: SmartTurn, questions: dict[str, bytes], text: str
) -> None:
    pcm = questions[text]
    at = int(len(pcm) // 2 * QUESTIONS[text]) * 2  # whole samples
    complete, cut = smart_turn.score(pcm + PAUSE), smart_turn.score(pcm[:at] + PAUSE)
    assert cut < 0.5 <= complete, (cut, complete)


def test_the_model_reads_the_last_8_s(smart_turn: SmartTurn, questions: dict[str, bytes]) -> None:
    pcm = b"".join(questions.values()) + PAUSE  # about 11 s
    assert len(pcm) > WINDOW_SAMPLES * 2
    assert smart_turn.score(pcm) == smart_turn.score(pcm[-WINDOW_SAMPLES * 2 :])
    assert smart_turn.score(pcm) != smart_turn.score(pcm[: WINDOW_SAMPLES * 2])


def test_the_features_are_the_ones_the_model_was_trained_on(
    questions: dict[str, bytes],
) -> None:
    """faster-whisper's log-mel of the padded, normalized 8 s equals the reference extractor
    that ships next to the model in the wheel (read here as a file; pipecat is not imported)."""
    reference = importlib.metadata.distribution("pipecat-ai").locate_file(
        "pipecat/audio/turn/smart_turn/_whisper_features.py"
    )
    spec = importlib.util.spec_from_file_location("smart_turn_features", str(reference))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from faster_whisper.feature_extractor import FeatureExtractor

    pcm = questions[next(iter(QUESTIONS))] + PAUSE
    samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
    padded = np.pad(samples, (WINDOW_SAMPLES - samples.size, 0))
    expected = module.compute_whisper_log_mel_features(padded, do_normalize=True)
    features = FeatureExtractor()(model_input(pcm), padding=0)
    assert features.shape == expected.shape == (80, 800)
    assert np.abs(features - expected).max() < 1e-4


def test_the_model_file_is_found_in_the_installed_wheel_without_importing_it() -> None:
    path = smart_turn_path()
    assert path.name == "smart-turn-v3.2-cpu.onnx" and path.stat().st_size > 8_000_000


def test_no_wheel_is_a_typed_error_that_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(turn_model, "SMART_TURN_WHEEL", "no-such-wheel-here")
    with pytest.raises(TurnModelUnavailable, match=r"bootstrap\.sh") as missing:
        SmartTurn().load()
    assert missing.value.code == "turn_model_unavailable"


def test_a_missing_or_broken_model_file_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(TurnModelUnavailable, match="is missing"):
        SmartTurn(tmp_path / "smart-turn.onnx").load()
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not an onnx model")
    with pytest.raises(TurnModelUnavailable, match="does not load"):
        SmartTurn(broken).load()


def test_scoring_before_loading_or_odd_bytes_is_a_typed_error(smart_turn: SmartTurn) -> None:
    with pytest.raises(TurnModelUnavailable, match="not loaded"):
        SmartTurn().score(silence(100))
    for bad in (b"", b"\x00\x01\x02"):
        with pytest.raises(TurnModelError, match="whole s16le samples") as refused:
            smart_turn.score(bad)
        assert refused.value.code == "turn_model_failed"


def test_silence_and_noise_get_a_score_in_range(smart_turn: SmartTurn) -> None:
    rng = np.random.default_rng(0)
    for pcm in (silence(1000), to_pcm(rng.uniform(-0.3, 0.3, 16000))):
        assert 0.0 <= smart_turn.score(pcm) <= 1.0


def test_the_judge_scores_off_the_loop_and_says_what_it_cost(
    questions: dict[str, bytes],
) -> None:
    judge = shared_smart_turn()
    assert shared_smart_turn() is judge  # one per process
    pcm = questions[next(iter(QUESTIONS))] + PAUSE

    async def judged() -> tuple[float, float]:
        await judge.load()
        turn = await judge.judge(pcm)
        return turn.score, turn.cost_ms

    score, cost_ms = asyncio.run(judged())
    assert score == round(judge.model.score(pcm), 4) and cost_ms > 0


def test_a_judge_passes_the_models_typed_errors_on() -> None:
    async def unloaded() -> None:
        await TurnJudge(SmartTurn()).judge(silence(100))

    with pytest.raises(TurnModelUnavailable):
        asyncio.run(unloaded())
