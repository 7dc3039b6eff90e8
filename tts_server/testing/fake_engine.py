"""A fast fake engine for tests and benchmarks where the model is not the point (admission, load).

It is a real ``Engine`` (worker thread, piece splitting, trimming, cancel) whose G2P passes the
text through and whose model is a tone of about the length real speech of that text would have.
``gate``, when given, holds every inference until the test sets it: the engine thread is busy.
``delay_s`` makes every inference take that long, so that segments queue behind synthesis.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np

from tts_protocol import SAMPLE_RATE
from tts_server.engines import Engine
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed

SECONDS_PER_CHAR = 0.06  # about a real speaker's pace, so the warm-up finds it plausible


def _pass_through(text: str) -> str:
    return text


class FakeEngine(Engine):
    """Speaks a 220 Hz tone, ``SECONDS_PER_CHAR`` per character, in any of its voices."""

    name = "fake"
    preferred_voice = "af_fake"

    def __init__(self, gate: threading.Event | None = None, delay_s: float = 0.0) -> None:
        super().__init__(_pass_through)  # type: ignore[arg-type]  # the fake needs no G2P
        self._voices = {"af_fake": None, "bf_fake": None}
        self._gate = gate
        self._delay_s = delay_s
        self.calls = 0  # inferences started, read by tests

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        return [Timed(self.tone(piece)) for piece in pieces]

    def tone(self, piece: Piece) -> np.ndarray:
        """Blocking: one piece's tone, once ``gate`` is open and ``delay_s`` has passed."""
        self.calls += 1
        if self._gate is not None:
            self._gate.wait()
        if self._delay_s:
            time.sleep(self._delay_s)
        samples = int(len(piece.phonemes) * SECONDS_PER_CHAR / piece.speed * SAMPLE_RATE)
        t = np.arange(samples, dtype=np.float32) / SAMPLE_RATE
        return (0.3 * np.sin(2 * np.pi * 220.0 * t)).astype(np.float32)
