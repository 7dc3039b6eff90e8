"""Whisper tiny.en behind the Recognizer interface, on the project's own speech."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import faster_whisper
import pytest

from agent.config import ListeningConfig
from agent.listening import whisper
from agent.listening.backchannel import MURMUR_PROMPT
from agent.listening.fitted_window import LOW_LOGPROB
from agent.listening.recognizer import (
    RecognitionError,
    Recognizer,
    RecognizerBusy,
    RecognizerUnavailable,
)
from agent.listening.whisper import (
    NO_SPEECH_PROB,
    WhisperRecognizer,
    default_model_path,
    shared_whisper,
)
from bench.speech.intelligibility import word_error_rate
from tests.agent.listening.speech import silence, spoken
from tts_server.engines import Engine

SENTENCES = (
    "Please tell me a short story about a friendly robot.",
    "What is the capital of France?",
    "Turn on the lights in the kitchen.",
)


OVERLAP_GRACE_S = 0.5  # how long a held recognition waits for another to start beside it


class FakeWhisper:
    """faster-whisper's ``WhisperModel``, faked: each transcription waits for ``go`` (set at
    first), then raises ``error`` if there is one; ``most`` counts the most that ran at once."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.segments: list[Segment] = []  # what each transcription hears
        self.threads: list[str] = []  # the thread each ran on
        self.options: list[dict[str, object]] = []  # what each was asked with
        self.go = threading.Event()
        self.go.set()
        self.entered = threading.Event()  # a transcription began
        self.overlapped = threading.Event()  # two ran at once
        self.running = self.most = 0
        self._lock = threading.Lock()

    def transcribe(self, audio: object, **options: object) -> tuple[Any, None]:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
            if self.running > 1:
                self.overlapped.set()
        self.entered.set()
        self.threads.append(threading.current_thread().name)
        self.options.append(options)
        try:
            self.go.wait()
            if self.error is not None:
                raise self.error
            return iter(self.segments), None
        finally:
            with self._lock:
                self.running -= 1


@dataclass(frozen=True)
class Segment:
    """What faster-whisper says of a stretch of audio (the fields the recognizer reads)."""

    text: str
    no_speech_prob: float
    avg_logprob: float


@pytest.fixture
def fake_whisper(monkeypatch: pytest.MonkeyPatch) -> FakeWhisper:
    """The model every ``WhisperRecognizer`` made in the test loads (its real ``_load`` runs)."""
    model = FakeWhisper()
    monkeypatch.setattr(faster_whisper, "WhisperModel", lambda *args, **kwargs: model)
    return model


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


async def test_a_model_that_fails_on_an_utterance_is_asr_failed(
    fake_whisper: FakeWhisper,
) -> None:
    fake_whisper.error = RuntimeError("out of memory")
    recognizer = WhisperRecognizer(context_s=0)  # the whole window: transcribe, faked
    with pytest.raises(RecognitionError) as failed:
        await recognizer.recognize(silence(100))
    assert type(failed.value) is RecognitionError and failed.value.code == "asr_failed"
    assert str(failed.value) == "recognition failed: RuntimeError: out of memory"
    assert recognizer.queue_depth == 0
    fake_whisper.error = None  # the recognizer goes on serving
    assert (await recognizer.recognize(silence(100))).text == ""


@pytest.mark.parametrize("concurrency", [1, 2])
async def test_no_more_than_the_concurrency_recognize_at_once(
    fake_whisper: FakeWhisper, concurrency: int
) -> None:
    recognizer = WhisperRecognizer(concurrency=concurrency, context_s=0)
    fake_whisper.go.clear()  # the first recognitions are held until the others had their chance
    recognitions = [asyncio.ensure_future(recognizer.recognize(silence(100))) for _ in range(4)]
    await asyncio.to_thread(fake_whisper.entered.wait)
    assert recognizer.queue_depth == 4  # all four are in the pool, running or waiting
    # With a pool of two, the second starts beside the first. With one, none ever can, so
    # the wait runs out, whatever the machine's speed (the grace is not a timed assertion):
    # a pool that ignored the bound would have started the others at once.
    grace = OVERLAP_GRACE_S if concurrency == 1 else None
    await asyncio.to_thread(fake_whisper.overlapped.wait, grace)
    fake_whisper.go.set()
    await asyncio.gather(*recognitions)
    assert fake_whisper.most == concurrency
    assert recognizer.queue_depth == 0


async def test_recognitions_past_the_queue_bound_are_refused_not_queued(
    fake_whisper: FakeWhisper,
) -> None:
    recognizer = WhisperRecognizer(max_queue=1, context_s=0)
    fake_whisper.go.clear()
    first = asyncio.ensure_future(recognizer.recognize(silence(100)))
    await asyncio.to_thread(fake_whisper.entered.wait)  # the first one is running
    assert recognizer.queue_depth == 1
    with pytest.raises(RecognizerBusy) as refused:
        await recognizer.recognize(silence(100))
    assert refused.value.code == "asr_busy"
    assert str(refused.value) == "1 recognitions are waiting already"
    fake_whisper.go.set()
    assert (await first).text == ""
    assert recognizer.queue_depth == 0


async def test_the_model_loads_on_the_cpu_in_int8_with_the_services_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads: list[tuple[tuple[object, ...], dict[str, object]]] = []

    def record(*args: object, **kwargs: object) -> FakeWhisper:
        loads.append((args, kwargs))
        return FakeWhisper()

    monkeypatch.setattr(faster_whisper, "WhisperModel", record)
    config = ListeningConfig()
    await WhisperRecognizer().load()  # made without settings: the service's defaults
    await WhisperRecognizer("/models/base", threads=3, concurrency=2).load()
    common = {"device": "cpu", "compute_type": "int8", "local_files_only": True}
    assert loads == [
        (
            (default_model_path(),),
            common | {"cpu_threads": config.asr_threads, "num_workers": config.asr_concurrency},
        ),
        (("/models/base",), common | {"cpu_threads": 3, "num_workers": 2}),
    ]


async def test_a_recognition_runs_on_a_whisper_thread_never_the_event_loop(
    fake_whisper: FakeWhisper,
) -> None:
    await WhisperRecognizer(context_s=0).recognize(silence(100))
    [name] = fake_whisper.threads
    assert name.startswith("whisper_") and name != threading.current_thread().name


async def test_the_default_queue_bound_is_the_services(fake_whisper: FakeWhisper) -> None:
    recognizer, bound = WhisperRecognizer(context_s=0), ListeningConfig().asr_max_queue
    fake_whisper.go.clear()
    held = [asyncio.ensure_future(recognizer.recognize(silence(100))) for _ in range(bound)]
    await asyncio.to_thread(fake_whisper.entered.wait)
    assert recognizer.queue_depth == bound
    with pytest.raises(RecognizerBusy):
        await recognizer.recognize(silence(100))
    fake_whisper.go.set()
    await asyncio.gather(*held)


@pytest.mark.parametrize(
    ("no_speech", "logprob", "kept"),
    [
        (NO_SPEECH_PROB + 0.01, LOW_LOGPROB - 0.01, False),  # silent and unsure: nobody spoke
        (NO_SPEECH_PROB, LOW_LOGPROB - 0.5, True),  # at the no-speech bar, not over it
        (NO_SPEECH_PROB + 0.3, LOW_LOGPROB, True),  # unsure at the bar, not under it
        (0.95, -0.2, True),  # thought silent, but sure of its words
        (0.1, -2.0, True),  # unsure of its words, but someone spoke
    ],
)
async def test_a_segment_is_dropped_only_when_whisper_thinks_it_silent_and_is_unsure(
    fake_whisper: FakeWhisper, no_speech: float, logprob: float, kept: bool
) -> None:
    fake_whisper.segments = [
        Segment(" Hello there.", 0.01, -0.1),
        Segment(" maybe", no_speech, logprob),
    ]
    recognition = await WhisperRecognizer(context_s=0).recognize(silence(100))
    assert recognition.text == ("Hello there. maybe" if kept else "Hello there.")


async def test_the_whole_window_is_greedy_english_without_timestamps_or_its_own_vad(
    fake_whisper: FakeWhisper,
) -> None:
    await WhisperRecognizer(context_s=0).recognize(silence(100))
    assert fake_whisper.options == [
        {
            "language": "en",
            "beam_size": 1,
            "without_timestamps": True,
            "condition_on_previous_text": False,
            "vad_filter": False,  # the endpointer cut the utterance already
            "initial_prompt": None,  # nothing said before (a murmur's reading again has one)
        }
    ]


async def test_a_recognition_says_how_long_it_took_to_a_tenth_of_a_millisecond(
    fake_whisper: FakeWhisper, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter([10.0, 10.12345])  # when it started, when it ended
    monkeypatch.setattr(whisper, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    recognition = await WhisperRecognizer(context_s=0).recognize(silence(100))
    assert recognition.asr_ms == 123.5


async def test_the_shared_recognizer_loads_the_model_the_settings_name(tmp_path: object) -> None:
    folder = f"{tmp_path}/whisper-base"
    recognizer = shared_whisper(ListeningConfig(asr_model=folder))
    with pytest.raises(RecognizerUnavailable) as failed:
        await recognizer.load()
    assert folder in str(failed.value)


# --- a murmur over a paused reply (docs/listening.md, "False interruptions") ------------------


class Readings:
    """``fitted``, ``whole_window`` and ``timed``, scripted: what each reads after each prompt
    ("": none); a fitted reading of None is unsure (the whole window reads it); ``timed``: the
    reading with timestamps after the murmur prompt. ``asked``: each reading and its prompt."""

    def __init__(
        self, fitted: dict[str, str | None], whole: dict[str, str], timed: str | None = None
    ) -> None:
        self.fitted, self.whole, self.timed = fitted, whole, timed
        self.asked: list[tuple[str, str]] = []

    def read_timed(self, *args: object) -> str | None:
        self.asked.append(("timed", str(args[-1])))
        return self.timed

    def read_fitted(self, *args: object) -> str | None:
        before = str(args[-1])
        self.asked.append(("fitted", before))
        return self.fitted[before]

    def read_whole(self, model: object, audio: object, before: str = "") -> str:
        self.asked.append(("whole", before))
        return self.whole[before]


def scripted(monkeypatch: pytest.MonkeyPatch, readings: Readings) -> WhisperRecognizer:
    monkeypatch.setattr(whisper, "fitted", readings.read_fitted)
    monkeypatch.setattr(whisper, "whole_window", readings.read_whole)
    monkeypatch.setattr(whisper, "timed", readings.read_timed)
    recognizer = WhisperRecognizer()
    recognizer._model = FakeWhisper()  # type: ignore[assignment]  # loaded: nothing reads it
    return recognizer


PROMPT = MURMUR_PROMPT


async def test_an_unsure_reading_over_a_paused_reply_is_read_again_and_a_murmur_stands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readings = Readings({"": None, PROMPT: "Mm-hmm."}, {"": "And then I came."}, "Mm-hmm.")
    recognizer = scripted(monkeypatch, readings)
    assert (await recognizer.recognize(silence(800), murmurs=True)).text == "Mm-hmm."
    assert readings.asked == [("fitted", ""), ("whole", ""), ("fitted", PROMPT), ("timed", PROMPT)]
    assert (await recognizer.recognize(silence(800))).text == "And then I came."  # no pause
    assert readings.asked[4:] == [("fitted", ""), ("whole", "")]


@pytest.mark.parametrize("timed", ["Mm-hmm. Wait.", "Hmm...", None])
async def test_a_murmur_stands_only_if_the_reading_with_timestamps_is_only_murmurs_too(
    monkeypatch: pytest.MonkeyPatch, timed: str | None
) -> None:
    """ "Mm, wait." read as "Mm-hmm." lost its word in one mode, not in the other (None: the
    window is not shorter, so no second mode was read)."""
    readings = Readings({"": None, PROMPT: "Mm-hmm."}, {"": "Moate."}, timed)
    recognition = await scripted(monkeypatch, readings).recognize(silence(800), murmurs=True)
    assert recognition.text == "Moate."
    assert readings.asked[-1] == ("timed", PROMPT)


@pytest.mark.parametrize("again", ["Mm-hmm, no.", "Hmm.", "Yeah.", "Stop.", ""])
async def test_a_reading_again_that_is_not_only_murmurs_leaves_the_first(
    monkeypatch: pytest.MonkeyPatch, again: str
) -> None:
    readings = Readings({"": None, PROMPT: None}, {"": "Hey.", PROMPT: again})
    recognition = await scripted(monkeypatch, readings).recognize(silence(800), murmurs=True)
    assert recognition.text == "Hey."
    assert readings.asked[2:] == [("fitted", PROMPT), ("whole", PROMPT)]  # the whole window too
    # and the reading with timestamps is not asked for: the first after the prompt decides


async def test_a_sure_reading_is_never_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    readings = Readings({"": "Memo."}, {})
    recognition = await scripted(monkeypatch, readings).recognize(silence(800), murmurs=True)
    assert recognition.text == "Memo." and readings.asked == [("fitted", "")]


async def test_with_murmurs_off_an_unsure_reading_is_not_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readings = Readings({"": None}, {"": "And then I came."})
    scripted(monkeypatch, readings)
    recognizer = WhisperRecognizer(murmurs=False)
    recognizer._model = FakeWhisper()  # type: ignore[assignment]
    assert (await recognizer.recognize(silence(800), murmurs=True)).text == "And then I came."
    assert readings.asked == [("fitted", ""), ("whole", "")]


def test_murmurs_are_read_again_by_default_and_the_setting_reaches_the_shared_recognizer() -> None:
    assert ListeningConfig().asr_murmurs is True
    assert WhisperRecognizer()._murmurs is True
    assert shared_whisper(ListeningConfig(asr_murmurs=False))._murmurs is False


async def test_the_whole_window_reads_again_after_the_prompt_as_its_initial_prompt(
    fake_whisper: FakeWhisper,
) -> None:
    fake_whisper.segments = [Segment(" Damn.", 0.1, -0.5)]
    await WhisperRecognizer(context_s=0).recognize(silence(100), murmurs=True)
    assert [options.get("initial_prompt") for options in fake_whisper.options] == [None, PROMPT]


MURMUR_CASES = {"Mm-hm.": "Mm-hmm.", "Stop.": "Stop."}


@pytest.fixture(scope="module")
def espeak_klatt() -> dict[str, bytes]:
    """eSpeak NG's klatt voice, as the socket's VAD cuts it (192 ms before, 256 after): its
    "Mm-hm." tiny.en reads as words ('MMA camp.'), unsure; its "Stop." unsure too."""
    from bench.speech.espeak_voice import say

    return {text: silence(192) + say(text, "en-us+klatt") + silence(256) for text in MURMUR_CASES}


@pytest.mark.parametrize("text", MURMUR_CASES)
async def test_tiny_en_reads_a_murmur_over_a_paused_reply_as_one_and_stop_as_stop(
    espeak_klatt: dict[str, bytes], text: str
) -> None:
    recognizer = shared_whisper(ListeningConfig(asr_phases=1))
    plain = await recognizer.recognize(espeak_klatt[text])
    over_a_pause = await recognizer.recognize(espeak_klatt[text], murmurs=True)
    assert over_a_pause.text == MURMUR_CASES[text], over_a_pause.text
    assert (plain.text == over_a_pause.text) is (text == "Stop."), plain.text
