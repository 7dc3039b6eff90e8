"""Fakes of the voice input's models that the in-process voice tests share."""

from __future__ import annotations

from agent.listening.settings import WINDOW_BYTES


class LoudIsSpeech:
    """Silero's interface: each whole 32 ms window, speech if it holds any sound."""

    def __init__(self) -> None:
        self._rest = b""

    def windows(self, pcm: bytes) -> list[tuple[bytes, float]]:
        data = self._rest + pcm
        whole = len(data) - len(data) % WINDOW_BYTES
        self._rest = data[whole:]
        return [
            (data[i : i + WINDOW_BYTES], 0.9 if any(data[i : i + WINDOW_BYTES]) else 0.0)
            for i in range(0, whole, WINDOW_BYTES)
        ]

    def reset(self) -> None:
        self._rest = b""
