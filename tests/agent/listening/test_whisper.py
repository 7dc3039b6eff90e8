"""Whisper tiny.en behind the Recognizer interface, on the project's own speech."""

from __future__ import annotations

import asyncio

import pytest

from agent.config import ListeningConfig
from agent.listening.recognizer import Recognizer, RecognizerBusy, RecognizerUnavailable
from agent.listening.whisper import WhisperRecognizer, shared_whisper
from bench.speech.intelligibility import word_error_rate
from tests.agent.listening.speech import silence, spoken
from tts_server.engines import Engine

SENTENCES = (
    "Please tell me a short story about a friendly robot.",
    "What is the capital of France?",
    "Turn on the lights in the kitchen.",
)


@pytest.fixture(scope="module")
def speech(engine: Engine) -> dict[str, bytes]:
    return {text: silence(200) + spoken(engine, text) + silence(300) for text in SENTENCES}


def test_one_recognizer_serves_the_whole_process() -> None:
    config = ListeningConfig()
    recognizer: Recognizer = shared_whisper(config)
    assert shared_whisper(ListeningConfig()) is recognizer  # both front doors get this one
    assert recognizer.queue_depth == 0


@pytest.mark.parametrize("text", SENTENCES)
async def test_the_projects_speech_is_recognized(speech: dict[str, bytes], text: str) -> None:
    recognition = await shared_whisper(ListeningConfig()).recognize(speech[text])
    assert word_error_rate(text, recognition.text) <= 0.2, recognition.text
    assert recognition.asr_ms > 0


async def test_silence_is_recognized_as_nothing() -> None:
    recognition = await shared_whisper(ListeningConfig()).recognize(silence(2000))
    assert recognition.text == ""


async def test_a_model_that_does_not_load_is_asr_unavailable(tmp_path: object) -> None:
    recognizer = WhisperRecognizer(model_path=f"{tmp_path}/no-model-here")
    with pytest.raises(RecognizerUnavailable) as failed:
        await recognizer.load()
    assert failed.value.code == "asr_unavailable"
    with pytest.raises(RecognizerUnavailable):  # and again: nothing half-loaded is kept
        await recognizer.recognize(silence(100))


async def test_recognitions_past_the_queue_bound_are_refused_not_queued(
    speech: dict[str, bytes],
) -> None:
    recognizer = WhisperRecognizer(max_queue=1)
    await recognizer.load()
    first = asyncio.ensure_future(recognizer.recognize(speech[SENTENCES[1]]))
    await asyncio.sleep(0)  # the first one is running
    assert recognizer.queue_depth == 1
    with pytest.raises(RecognizerBusy) as refused:
        await recognizer.recognize(speech[SENTENCES[1]])
    assert refused.value.code == "asr_busy"
    assert word_error_rate(SENTENCES[1], (await first).text) <= 0.2
    assert recognizer.queue_depth == 0
