"""Eager recognition: start recognizing at a pause the turn model called incomplete.

The turn then waits (``turn_wait_ms``); when it ends after that wait with no new speech, the
utterance is the same speech (only more of the silence after it), so the transcript started at
the pause stands for it: the turn starts with a transcript recognized while it waited. Speech
that resumes makes it stale: it is
dropped (cancelled if it has not started; a recognition that runs is left to finish, since
its thread cannot be stopped, and nobody reads it). One per socket; asyncio only.
"""

from __future__ import annotations

import asyncio
import contextlib

from agent.listening.recognizer import Recognition, Recognizer


class EagerRecognition:
    """A socket's recognitions: at most one started early, for the pause ``ticket``."""

    def __init__(self, recognizer: Recognizer) -> None:
        self._recognizer = recognizer
        self._ticket: int | None = None
        self._early: asyncio.Task[Recognition] | None = None

    def start(self, ticket: int, pcm: bytes, murmurs: bool = False) -> None:
        """Recognize the utterance so far at pause ``ticket`` (a stale one is dropped);
        ``murmurs``: over a paused reply (``Recognizer.recognize``)."""
        self.drop()
        self._ticket = ticket
        self._early = asyncio.create_task(
            self._recognizer.recognize(pcm, murmurs), name="eager-asr"
        )
        self._early.add_done_callback(_retrieve)

    async def early(self, ticket: int) -> Recognition | None:
        """The recognition started at pause ``ticket``, once it is done, left for ``recognize``
        to take (None: none was started there). Raises ``RecognitionError``; cancelling the
        wait leaves the recognition running."""
        early = self._early
        if early is None or ticket != self._ticket:
            return None
        return await asyncio.shield(early)

    async def recognize(self, pcm: bytes, ticket: int | None, murmurs: bool = False) -> Recognition:
        """The transcript of an utterance: the one started at its pause if that is ``ticket``,
        else a recognition of ``pcm`` now (``murmurs``: over a paused reply). Raises
        ``RecognitionError`` (the early one's too)."""
        early = self._early
        if early is None or ticket is None or ticket != self._ticket:
            self.drop()
            return await self._recognizer.recognize(pcm, murmurs)
        self._early, self._ticket = None, None
        return await early

    def drop(self) -> None:
        """Forget the early recognition, if any (new speech, a new pause, the socket's end)."""
        early, self._early, self._ticket = self._early, None, None
        if early is not None:
            early.cancel()


def _retrieve(task: asyncio.Task[Recognition]) -> None:
    """A dropped recognition's error is nobody's news (one that is used is awaited)."""
    if not task.cancelled():
        with contextlib.suppress(Exception):
            task.exception()
