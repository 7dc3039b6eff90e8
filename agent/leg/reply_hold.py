"""A reply paused for the user's speech over it, until their words decide (docs/listening.md,
"False interruptions"): ``VoiceInput`` pauses it at ``barge_in_ms`` (``ReplyHold.pause``), the
utterance's transcript cuts it or lets it play on, and with no words by ``resume_ms`` after the
pause it plays on (``ReplyHold.due``, asked at that time by a ``PlayOnTimer``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agent.core.playback import Playback
from agent.events import ReplyPaused, ReplyResumed


@dataclass(slots=True)
class Pause:
    """The reply paused at ``at`` for the user's speech; ``resumed``: it plays on already (the
    resume bound), and only words that are not backchannels still cut it."""

    turn_id: str | None
    at: float
    resumed: bool = False


class ReplyHold:
    """One socket's paused reply, if any, on its ``playback`` clock; ``resume_s``: how long a
    pause waits for words."""

    def __init__(self, playback: Playback, resume_s: float) -> None:
        self.playback = playback
        self.resume_s = resume_s
        self._pause: Pause | None = None

    @property
    def holding(self) -> bool:
        """A reply was paused for the user's speech whose words are not heard yet (it may play
        on already, at the resume bound)."""
        return self._pause is not None

    def pause(self, now: float) -> ReplyPaused:
        """Pause the reply playing now, until the user's words decide."""
        self.playback.pause(now)
        self._pause = Pause(self.playback.turn_id, now)
        return ReplyPaused(self._pause.turn_id)

    def taken(self) -> Pause | None:
        """The pause the user's words now decide (none is held after)."""
        pause, self._pause = self._pause, None
        return pause

    def drop(self) -> None:
        """The paused reply was cut, or another turn started: nothing is held."""
        self._pause = None

    def play_on(self, now: float, pause: Pause | None = None) -> ReplyResumed | None:
        """The paused reply plays on at ``now`` (``pause``, else the one held, if any)."""
        pause = pause or self.taken()
        if pause is None or pause.resumed:
            return None
        self.playback.resume(now)
        return ReplyResumed(pause.turn_id)

    def due(self, now: float) -> ReplyResumed | None:
        """The paused reply plays on if no words have come by ``resume_s`` after its pause."""
        pause = self._pause
        if pause is None or pause.resumed or now < pause.at + self.resume_s:
            return None
        pause.resumed = True
        self.playback.resume(now)
        return ReplyResumed(pause.turn_id)


class PlayOnTimer:
    """Awaits ``due`` at the latest time it was set to (the loop's clock), unless cancelled: a
    paused reply's resume bound, where the reader may be waiting for a recognition, so no frame
    would tell."""

    def __init__(self, due: Callable[[], Awaitable[None]]) -> None:
        self._due = due
        self._task: asyncio.Task[None] | None = None

    def at(self, when: float) -> None:
        """Await ``due`` at ``when`` (instead of any time set before)."""
        self.cancel()
        self._task = asyncio.create_task(self._wait(when), name="ws-resume")

    def cancel(self) -> None:
        """Await nothing."""
        if self._task is not None:
            self._task.cancel()

    async def _wait(self, when: float) -> None:
        await asyncio.sleep(max(0.0, when - asyncio.get_running_loop().time()))
        await self._due()
