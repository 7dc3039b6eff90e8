"""One synthesis's timing, as its chunks are read: the same for the WebSocket and HTTP routes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from tts_server.engines.timings import Chunk


@dataclass(slots=True)
class Timing:
    """When a synthesis was queued (None: it was not), started, first spoke and ended; its
    samples. ``measured`` fills it in."""

    queued: float | None = None
    started: float = field(default_factory=time.perf_counter)
    first_audio: float | None = None  # when the first chunk arrived
    samples: int = 0
    ended: float | None = None  # set once the stream ran to its end

    @property
    def waited_s(self) -> float | None:
        """From queued to started; None when it was not queued."""
        return None if self.queued is None else self.started - self.queued

    @property
    def first_audio_s(self) -> float | None:
        """From queued (else started) to the first chunk; None until it arrives."""
        if self.first_audio is None:
            return None
        return self.first_audio - (self.started if self.queued is None else self.queued)

    @property
    def synthesis_s(self) -> float:
        """From the start to the end (to now, while the stream runs)."""
        return (self.ended or time.perf_counter()) - self.started

    @property
    def synthesis_ms(self) -> float:
        """``synthesis_s`` in milliseconds to 0.1 ms: what is reported, and observed."""
        return round(self.synthesis_s * 1000, 1)

    async def measured(self, chunks: AsyncIterator[Chunk]) -> AsyncIterator[Chunk]:
        """``chunks``, each counted (its samples included) before it is passed on."""
        async for chunk in chunks:
            if self.first_audio is None:
                self.first_audio = time.perf_counter()
            self.samples += chunk.audio.size
            yield chunk
        self.ended = time.perf_counter()
