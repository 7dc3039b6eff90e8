"""The eager start: a reply begun on the eager transcript while an unfinished turn waits.

When the turn model calls a pause incomplete, the turn waits (``turn_wait_ms``); most such
turns then end with no new speech. ``EagerStart`` starts the reply as soon as the pause's eager
recognition is done, with its events held by the socket (``ReplyHost``). If the turn ends at
that pause, the transcript is said and the held events go out (``confirm``); if speech resumes
or the user acts, the reply is stopped and withdrawn from the conversation without a sound
(``drop``). docs/listening.md, "The eager start".
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Protocol

from agent.events import Event, Transcript, TurnStart
from agent.leg.hooks import TurnWithdrawal
from agent.listening.eager import EagerRecognition
from agent.listening.listener import Utterance
from agent.listening.recognizer import Recognition, RecognitionError
from agent.requests import BadRequest

log = logging.getLogger("agent.ws")


class ReplyHost(Protocol):
    """What the eager start needs of its socket."""

    conversation: str

    @property
    def holding(self) -> bool:
        """A turn's events are held now."""

    async def start_held(self, text: str) -> None:
        """Start a turn of ``text`` whose events are held; raises ``BadRequest``."""

    async def release(self, transcript: Transcript) -> None:
        """Send ``transcript``, then the held events, and let the turn go on live."""

    async def stop_held(self) -> list[Event] | None:
        """Stop the held turn without a sound; its events, never sent (None: none held)."""


@dataclass(slots=True)
class _Guess:
    """A reply for pause ``ticket``: ``task`` awaits its recognition, then starts the turn."""

    ticket: int
    task: asyncio.Task[None] | None = None
    recognition: Recognition | None = None
    starting: bool = False  # past the recognition: the turn is being started, not cancellable


class EagerStart:
    """A socket's reply begun early: at most one, for one pause."""

    def __init__(
        self, host: ReplyHost, eager: EagerRecognition, withdraw: TurnWithdrawal | None
    ) -> None:
        self._host = host
        self._eager = eager
        self._withdraw = withdraw
        self._guess: _Guess | None = None

    @property
    def enabled(self) -> bool:
        """Replies can begin early: a withdrawal forgets those nobody heard."""
        return self._withdraw is not None

    def begin(self, ticket: int) -> None:
        """The turn waits after pause ``ticket``: start its reply once its transcript is ready
        (an older guess must have been dropped)."""
        guess = _Guess(ticket)
        guess.task = asyncio.create_task(self._start(guess), name="ws-eager")
        self._guess = guess

    async def _start(self, guess: _Guess) -> None:
        try:
            recognition = await self._eager.early(guess.ticket)
        except RecognitionError:
            return  # the utterance's own recognition says so, if the turn ends here
        if recognition is None or not recognition.text:
            return
        guess.recognition, guess.starting = recognition, True
        try:
            await self._host.start_held(recognition.text)
        except BadRequest:
            return  # the utterance's turn, if it comes, is refused in the open
        except Exception:  # a guess must never end the socket: the turn, if it comes, starts anew
            log.exception("a reply started early failed to start")

    async def drop(self) -> None:
        """Stop the reply begun early, if any, without a sound: nothing of it was sent, and its
        conversation forgets it."""
        guess, self._guess = self._guess, None
        if guess is None or guess.task is None:
            return
        if not guess.starting:
            guess.task.cancel()
        await asyncio.wait([guess.task])
        held = await self._host.stop_held()
        turn_id = next((e.turn_id for e in held or () if isinstance(e, TurnStart)), None)
        if turn_id is None or self._withdraw is None:
            return  # no turn was started
        try:
            await self._withdraw(turn_id, self._host.conversation)
        except Exception:  # the conversation keeps the guess's messages; the socket goes on
            log.exception("withdrawing turn %s failed", turn_id)

    async def resumed(self) -> None:
        """Speech after a judged pause: its eager recognition and held reply are moot."""
        self._eager.drop()
        await self.drop()

    async def confirm(self, utterance: Utterance) -> bool:
        """The turn ended: if at the pause a reply was begun on, say its transcript and let the
        reply be heard. False (and any other guess dropped) if none was begun there."""
        guess = self._guess
        if guess is None or guess.ticket != utterance.ticket:
            await self.drop()
            return False
        assert guess.task is not None
        await asyncio.wait([guess.task])
        self._guess = None
        recognition = guess.recognition
        if recognition is None or not self._host.holding:  # none started: recognize as ever
            return False
        self._eager.drop()  # done, and used here
        said = Transcript(recognition.text, utterance.audio_ms, recognition.asr_ms)
        await self._host.release(said)
        return True
