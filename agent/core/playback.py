"""What the page is still playing: barge-in by voice must know the agent speaks after its turn,
and a tool's filler must not talk over the words before the tool."""

from __future__ import annotations

from tts_protocol import SAMPLE_RATE


class Playback:
    """Until when the page plays the audio sent so far, by the page's gapless player: each
    chunk starts when it arrives or when the one before it ends. A reply synthesized faster
    than real time is all sent long before it is heard, so the agent is still speaking after
    its turn's ``turn.end``; barge-in by voice needs to know that."""

    def __init__(self) -> None:
        self.until = 0.0  # the loop's clock
        self.turn_id: str | None = None

    def sent(self, now: float, samples: int, turn_id: str | None) -> None:
        self.until = max(self.until, now) + samples / SAMPLE_RATE
        self.turn_id = turn_id

    def playing(self, now: float) -> bool:
        return now < self.until

    def left(self, now: float) -> float:
        """Seconds of the audio sent so far that the page has still to play at ``now``."""
        return max(0.0, self.until - now)

    def stop(self) -> None:
        self.until = 0.0
