"""Turn continuation: a reply the user spoke over before any of it was heard is no turn at all.

The user says "Stop.", pauses, and goes on: the turn ended at the pause, a reply began, and the
user's next words cut it before a sample of it played. What they said is one turn, and the reply
was never said. So when a barge-in by voice (or a push-to-talk press) cuts a reply, the socket
notes it (``Continuation.cut``); when the user's next words start a turn, the conversation is
asked to withdraw the cut reply if the user heard none of it (by the page's playback report, or
with none by what was sent of its audio; ``Conversation.withdraw_unheard``). If it was, it leaves
no trace in the history, and its prompt leads the new one: the two utterances are one user turn
(the socket says so with ``turn.withdrawn``, so that the page shows them as one and the reply
not at all). A reply heard in part stays as ever, cut to what was heard. docs/listening.md, "Turn
continuation".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from agent.events import Event, TurnWithdrawn
from agent.leg.hooks import TurnWithdrawal
from agent.requests import PlaybackReport

log = logging.getLogger("agent.ws")


class Continuation:
    """One socket's reply cut by the user's voice, and the prompt their next words continue.

    ``withdraw`` is the front door's ``TurnWithdrawal`` (None: replies are never withdrawn, and
    every utterance is a turn of its own); ``tell`` sends the socket's own events (the
    ``turn.withdrawn`` that tells the page)."""

    def __init__(
        self,
        conversation: str,
        withdraw: TurnWithdrawal | None,
        tell: Callable[[Event], Awaitable[None]],
    ) -> None:
        self._conversation = conversation
        self._withdraw = withdraw
        self._tell = tell
        self._cut: str | None = None  # the reply the user's voice cut, not settled yet
        self._carried: str | None = None  # the withdrawn reply's prompt, for the next turn

    def cut(self, turn_id: str | None) -> None:
        """The user's voice cut turn ``turn_id`` (None: no turn of theirs was on the air)."""
        if turn_id is not None:
            self._cut = turn_id

    def forget(self) -> None:
        """The user typed: what they type next is a turn of its own."""
        self._cut = self._carried = None

    async def prompt(self, text: str, heard: PlaybackReport | None) -> str:
        """The prompt of the turn the user's words ``text`` start: the withdrawn reply's prompt,
        then ``text``. ``heard`` is the page's last playback report. The cut reply is settled
        here once: withdrawn if nobody heard it (and the page told, ``turn.withdrawn``), else
        kept."""
        cut, self._cut = self._cut, None
        if cut is not None and self._withdraw is not None:
            try:
                carried = await self._withdraw(cut, self._conversation, heard)
            except Exception:  # the conversation keeps the reply; the socket goes on
                log.exception("withdrawing turn %s failed", cut)
                carried = None
            if carried:
                self._carried = carried
                await self._tell(TurnWithdrawn(cut, carried))
        return text if not self._carried else f"{self._carried} {text}"

    def taken(self) -> None:
        """A turn started on the prompt (or a held one was heard): nothing is carried now."""
        self._carried = None
