"""What the page is still playing: barge-in by voice must know the agent speaks after its turn,
and a tool's filler must not talk over the words before the tool."""

from __future__ import annotations

from tts_protocol import SAMPLE_RATE


class Playback:
    """Until when the page plays the audio sent so far, by the page's gapless player: each
    chunk starts when it arrives or when the one before it ends. A reply synthesized faster
    than real time is all sent long before it is heard, so the agent is still speaking after
    its turn's ``turn.end``; barge-in by voice needs to know that. A paused reply (the page's
    player paused where it was, ``reply.paused``) holds what it has left, and what comes
    meanwhile is added to it, until it is resumed."""

    def __init__(self) -> None:
        self.until = 0.0  # the loop's clock
        self.turn_id: str | None = None  # the turn on the air (its `turn.start` went out)
        self.held: float | None = None  # paused: seconds of audio the page has left to play

    def started(self, turn_id: str) -> None:
        """Turn ``turn_id`` starts: the page drops what an older turn left."""
        self.stop()
        self.turn_id = turn_id

    def sent(self, now: float, samples: int, turn_id: str | None) -> None:
        seconds = samples / SAMPLE_RATE
        if self.held is not None:
            self.held += seconds
        else:
            self.until = max(self.until, now) + seconds
        self.turn_id = turn_id

    def playing(self, now: float) -> bool:
        return self.left(now) > 0

    def left(self, now: float) -> float:
        """Seconds of the audio sent so far that the page has still to play at ``now``."""
        return self.held if self.held is not None else max(0.0, self.until - now)

    def pause(self, now: float) -> None:
        """The page pauses its player at ``now``: nothing plays until ``resume``."""
        if self.held is None:
            self.held = self.left(now)

    def resume(self, now: float) -> None:
        """The page plays on at ``now`` from where it paused."""
        if self.held is not None:
            self.until, self.held = now + self.held, None

    def stop(self) -> None:
        self.until, self.held = 0.0, None
