"""Utterances from speech probabilities: onset, pre-roll, end of turn after silence, a cap.

``Endpointer`` is told each 32 ms window of audio with its speech probability (``vad``) and
says where an utterance starts and ends; it holds no more than one utterance (at most the cap)
and the pre-roll, however long the input, so a socket's memory is bounded. A window at or over
the threshold is speech; speech goes on while the probability stays over a lower release
threshold (hysteresis, as Silero's own iterator does), and ends after ``silence_ms`` under it.

With a turn model (``turn_model=True``) the silence rule is adaptive: at the first pause of
``pause_ms`` the endpointer says ``Paused`` with the utterance so far, and whoever runs the
model answers with ``judged``: a score at or over ``turn_threshold`` ends the turn there; under
it, the model is asked once more at ``turn_recheck_ms`` of the same silence, where a score at or
over ``turn_recheck_threshold`` ends the turn (the model grows surer as the silence grows, and a
stricter bar keeps a speaker's pause from being taken for the end); under both, the turn ends
after ``turn_wait_ms`` of silence unless speech resumes (which asks again at the next pause, and
says ``Resumed`` for the pause it had asked about); no score (the model failed) falls back to
``silence_ms``. An utterance that holds a reply paused (``over_reply``) waits no longer than
``silence_ms`` either: its words, not the end of a turn, are what the paused reply waits for.
Pure: its clock is the windows it is given, and the scores come from outside.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from dataclasses import dataclass

from agent.config import ListeningConfig
from agent.listening.settings import WINDOW_BYTES, WINDOW_MS
from agent.listening.turn_model import TurnScore

RELEASE_BELOW = 0.15  # speech goes on down to this much under the threshold
TAIL_MS = 256  # silence kept after the speech: Whisper misreads words cut close at the end
TICKETS = itertools.count()  # unique in the process: an answer never fits another listener


@dataclass(frozen=True, slots=True)
class Started:
    """Speech began ``at_ms`` into the stream (its first voiced window)."""

    at_ms: float


@dataclass(frozen=True, slots=True)
class Ended:
    """The utterance is over: ``reason`` ``silence`` (end of turn) or ``max_length`` (cut).

    ``at_ms``: where its speech ended in the stream; ``pcm``: the pre-roll, the speech and up
    to ``TAIL_MS`` after it; ``waited_ms``: the silence after the speech when it ended;
    ``turn``: the turn model's last score on this pause, and ``complete``: whether it met that
    ask's threshold (None: the model was not asked, or did not answer); ``ticket``: the
    ``Paused`` whose audio this is, but for the silence after it (None: none was said since the
    speech).
    """

    at_ms: float
    pcm: bytes
    reason: str
    waited_ms: float = 0.0
    turn: TurnScore | None = None
    complete: bool | None = None
    ticket: int | None = None


@dataclass(frozen=True, slots=True)
class Resumed:
    """Speech came back after the ``Paused`` ``ticket``: what was started on its audio (an
    eager recognition, a held reply) stands for nothing now."""

    ticket: int


@dataclass(frozen=True, slots=True)
class Paused:
    """The speech paused for ``pause_ms`` (or, asked again, ``turn_recheck_ms``): score ``pcm``
    (the utterance so far: pre-roll, speech and the pause) with the turn model and answer
    ``Endpointer.judged(ticket, score)``. ``last``: an unfinished answer leaves the turn to wait
    (no other ask follows in this pause)."""

    pcm: bytes
    ticket: int
    last: bool = True


class Endpointer:
    """One stream's utterances, a window at a time (``push``)."""

    def __init__(self, config: ListeningConfig, turn_model: bool = False) -> None:
        self._threshold = config.vad_threshold
        self._release = max(0.0, config.vad_threshold - RELEASE_BELOW)
        self._onset = max(1, math.ceil(config.onset_ms / WINDOW_MS))
        self._silence = max(1, math.ceil(config.silence_ms / WINDOW_MS))
        self._max_windows = max(self._onset, config.max_utterance_bytes // WINDOW_BYTES)
        self._tail = TAIL_MS // WINDOW_MS  # at most the silence waited
        # With a turn model: ask at the pause; wait this long (windows) without an answer.
        self._pause = math.ceil(config.pause_ms / WINDOW_MS) if turn_model else None
        self._wait = max(1, math.ceil(config.turn_wait_ms / WINDOW_MS))
        recheck = math.ceil(config.turn_recheck_ms / WINDOW_MS)
        asks_again = self._pause is not None and self._pause < recheck < self._wait
        self._recheck = recheck if asks_again else None  # the second ask, in windows
        self._turn_threshold = config.turn_threshold
        self._recheck_threshold = config.turn_recheck_threshold
        self._limit = self._wait if turn_model else self._silence  # silence that ends the turn
        self._ticket = next(TICKETS)  # the pause a score answers: new speech moves it
        self._turn: TurnScore | None = None
        self._complete: bool | None = None  # whether ``_turn`` met its ask's threshold
        self._asks = 0  # the model's asks in this pause
        self._over_reply = False  # the utterance holds a reply paused: waits at most the silence
        self._preroll: deque[bytes] = deque(maxlen=config.preroll_ms // WINDOW_MS)
        self._utterance: list[bytes] = []
        self._index = 0  # windows seen
        self._first = 0  # the index of the utterance's first window (pre-roll included)
        self._start = 0  # ... of its first voiced window
        self._last_voiced = 0
        self._voiced = 0  # voiced windows during the onset
        self._quiet = 0  # windows under the release threshold in a row
        self.state = "idle"  # idle | onset | speech

    @property
    def speech_ms(self) -> float:
        """How long the current utterance's speech has lasted (0 before its onset)."""
        if self.state != "speech":
            return 0.0
        return float((self._last_voiced - self._start + 1) * WINDOW_MS)

    @property
    def buffered_bytes(self) -> int:
        """Audio held: the utterance so far and the pre-roll."""
        return sum(map(len, self._utterance)) + sum(map(len, self._preroll))

    def reset(self) -> None:
        """Drop the utterance in progress and the pre-roll."""
        self._utterance = []
        self._preroll.clear()
        self.state = "idle"
        self._over_reply = False
        self._resumed()

    def over_reply(self, over: bool) -> None:
        """Whether the utterance in progress holds a reply paused (spoken over it for
        ``barge_in_ms``, not yet for ``interrupt_ms``): the reply waits for its words, so an
        unfinished score waits ``silence_ms``, not ``turn_wait_ms`` (a lone "right" would
        otherwise hold the reply for the whole wait). Cut, the reply waits for nothing: the
        utterance is a turn like any other again."""
        self._over_reply = over

    def _ends_at(self) -> int:
        """The quiet windows after which the utterance ends."""
        return min(self._limit, self._silence) if self._over_reply else self._limit

    def push(self, window: bytes, probability: float) -> list[Started | Ended | Paused | Resumed]:
        """Take the next window and its speech probability; say what happened."""
        index, self._index = self._index, self._index + 1
        voiced, held = probability >= self._threshold, probability >= self._release
        if self.state == "idle":
            if not voiced:
                self._preroll.append(window)
                return []
            self._first = index - len(self._preroll)
            self._utterance = [*self._preroll, window]
            self._preroll.clear()
            self._start = self._last_voiced = index
            self._voiced, self.state = 0, "onset"
        elif self.state == "onset":
            if not held:  # a click, not speech: its windows become pre-roll again
                self._preroll.extend([*self._utterance, window])
                self._utterance, self.state = [], "idle"
                return []
            self._utterance.append(window)
        else:
            self._utterance.append(window)
        if self.state == "onset":
            if voiced:
                self._voiced += 1
                self._last_voiced = index
            if self._voiced < self._onset:
                return []
            self.state, self._quiet = "speech", 0
            return [Started(self._start * WINDOW_MS)]
        resumed: list[Started | Ended | Paused | Resumed] = []
        if held:
            if self._quiet:
                if self._pause is not None and self._quiet >= self._pause:
                    resumed.append(Resumed(self._ticket))  # after a pause it was asked about
                self._resumed()
            self._quiet, self._last_voiced = 0, index
        else:
            self._quiet += 1
        if self._quiet >= self._ends_at():
            return [self._end("silence")]
        if len(self._utterance) >= self._max_windows:
            return [*resumed, self._end("max_length")]
        again = self._quiet == self._recheck and self._complete is False
        if self._quiet == self._pause or again:
            self._asks += 1
            last = again or self._recheck is None
            return [Paused(b"".join(self._utterance), self._ticket, last)]
        return resumed

    def judged(self, ticket: int, turn: TurnScore | None) -> list[Ended]:
        """The turn model's answer to ``Paused`` ``ticket`` (None: it failed): the end of the
        turn, or nothing (wait on; and an answer to an older pause is ignored)."""
        if self.state != "speech" or ticket != self._ticket:
            return []
        self._turn = turn
        if turn is None:
            self._complete, self._limit = None, self._silence  # the plain silence rule
        else:
            threshold = self._recheck_threshold if self._asks > 1 else self._turn_threshold
            self._complete = turn.score >= threshold
            if self._complete:
                self._limit = self._quiet  # complete: the turn ends now
        return [self._end("silence")] if self._quiet >= self._ends_at() else []

    def _resumed(self) -> None:
        """Speech after a pause: a pending score is stale, and the next pause asks again."""
        self._ticket = next(TICKETS)
        self._turn, self._complete, self._asks = None, None, 0
        self._limit = self._silence if self._pause is None else self._wait

    def _end(self, reason: str) -> Ended:
        keep = self._last_voiced - self._first + 1 + self._tail
        pcm = b"".join(self._utterance[:keep])
        turn, complete = self._turn, self._complete
        paused = self._pause is not None and self._quiet >= self._pause
        ended = Ended(
            (self._last_voiced + 1) * WINDOW_MS,
            pcm,
            reason,
            self._quiet * WINDOW_MS,
            turn,
            complete,
            self._ticket if paused else None,
        )
        self._utterance, self.state = [], "idle"
        self._over_reply = False
        self._resumed()
        return ended
