"""The recognizer interface: what a socket needs of speech recognition, whatever runs it.

``agent.listening.whisper`` is the one that ships (faster-whisper, offline); a deployment can
put another behind the same two methods (a cloud service, a larger model). Errors are typed so
that a socket can tell the client which thing went wrong and keep serving.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class RecognitionError(Exception):
    """Recognition did not happen; ``code`` is the error the client is sent."""

    code = "asr_failed"


class RecognizerUnavailable(RecognitionError):
    """The recognizer cannot run at all (its model did not load)."""

    code = "asr_unavailable"


class RecognizerBusy(RecognitionError):
    """Too many recognitions are waiting already; this one was refused, not queued."""

    code = "asr_busy"


@dataclass(frozen=True, slots=True)
class Recognition:
    """What was said in an utterance, and how long recognizing it took."""

    text: str
    asr_ms: float


class Recognizer(Protocol):
    """Speech to text for 16 kHz s16le mono utterances, shared by every socket of a process."""

    @property
    def queue_depth(self) -> int:
        """Recognitions waiting or running now (``/metrics``)."""
        ...

    async def load(self) -> None:
        """Be ready to recognize (load a model once); raises ``RecognizerUnavailable``."""
        ...

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        """The text of one utterance, off the event loop; ``murmurs``: it was said over a paused
        reply, so a murmur ("mm-hm") may be read as one where the words are unsure (docs/
        listening.md, "False interruptions"). Raises ``RecognitionError``."""
        ...
