"""The knobs of listening, with their defaults (``AgentConfig.listening``, docs/listening.md)."""

from __future__ import annotations

from dataclasses import dataclass

from agent.browser_leg import MIC_SAMPLE_RATE

SAMPLE_RATE = MIC_SAMPLE_RATE  # what a client sends: Whisper's rate, and Silero's
SAMPLE_FORMAT = "s16le"
BYTES_PER_SAMPLE = 2
WINDOW_SAMPLES = 512  # Silero's window at 16 kHz: 32 ms
WINDOW_BYTES = WINDOW_SAMPLES * BYTES_PER_SAMPLE
WINDOW_MS = WINDOW_SAMPLES * 1000 // SAMPLE_RATE


def pcm_ms(pcm_bytes: int) -> float:
    """How long ``pcm_bytes`` of 16 kHz s16le audio lasts, in ms."""
    return round(pcm_bytes / BYTES_PER_SAMPLE * 1000 / SAMPLE_RATE, 1)


@dataclass(frozen=True, slots=True)
class ListeningConfig:
    """How a socket listens; each field's variable is in ``agent.config``."""

    vad_threshold: float = 0.5  # VOICE_AGENT_VAD_THRESHOLD: Silero's speech probability
    onset_ms: int = 64  # VOICE_AGENT_LISTEN_ONSET_MS: speech this long starts an utterance
    silence_ms: int = 500  # VOICE_AGENT_LISTEN_SILENCE_MS: silence this long ends the turn
    barge_in_ms: int = 200  # VOICE_AGENT_BARGE_IN_MS: speech this long cuts a running turn
    preroll_ms: int = 192  # VOICE_AGENT_LISTEN_PREROLL_MS: audio kept from before the onset
    max_utterance_s: float = 20.0  # VOICE_AGENT_LISTEN_MAX_S: an utterance is cut here
    burst_s: float = 2.0  # VOICE_AGENT_LISTEN_BURST_S: how far ahead of real time audio may run
    max_frame_ms: int = 100  # a MIC frame holds at most this much audio (20-32 ms is usual)
    asr_model: str | None = None  # VOICE_AGENT_ASR_MODEL: a CTranslate2 Whisper folder
    asr_threads: int = 2  # VOICE_AGENT_ASR_THREADS: CPU threads per recognition
    asr_concurrency: int = 1  # VOICE_AGENT_ASR_CONCURRENCY: recognitions at once, per process
    asr_max_queue: int = 8  # VOICE_AGENT_ASR_MAX_QUEUE: more waiting is refused (asr_busy)

    @property
    def max_frame_bytes(self) -> int:
        return SAMPLE_RATE * self.max_frame_ms // 1000 * BYTES_PER_SAMPLE

    @property
    def max_utterance_bytes(self) -> int:
        return int(self.max_utterance_s * SAMPLE_RATE) * BYTES_PER_SAMPLE
