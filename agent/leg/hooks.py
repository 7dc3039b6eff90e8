"""What a front door hands a ``VoiceSocket``: how a turn starts, how a voice is checked, how a
reply begun early is withdrawn, and which conversation a socket is. Each door runs these where
its turns live (the dev server in place, the AgentCore app on the SDK's worker loop)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable

from starlette.websockets import WebSocket

from agent.browser_leg import SESSION_HEADER
from agent.core.service import DEFAULT_CONVERSATION
from agent.events import Event
from agent.requests import PlaybackReport, TurnRequest
from tts_protocol import VoiceMix

TurnEvents = AsyncGenerator[Event, None]
TurnStarter = Callable[[TurnRequest, str], Awaitable[TurnEvents]]
"""Starts a turn in a conversation and returns its events; raises ``BadRequest``."""
VoiceCheck = Callable[[VoiceMix], Awaitable[VoiceMix]]
"""A voice as the TTS server will take it (``VoiceAgent.check_voice``); raises ``BadRequest``
(``unknown_voice``)."""
TurnWithdrawal = Callable[[str, str, PlaybackReport | None], Awaitable[str | None]]
"""Forgets a turn (its id) of a conversation if nobody heard any of it, by the playback report
(None: by what was sent of its audio), and returns its prompt; None where it stays
(``VoiceAgent.withdraw``)."""


def conversation_of(websocket: WebSocket) -> str:
    """The conversation a socket belongs to: the session header, or the same-named query
    parameter (a browser cannot set headers on a WebSocket), else ``default``."""
    return (
        websocket.headers.get(SESSION_HEADER)
        or websocket.query_params.get(SESSION_HEADER)
        or DEFAULT_CONVERSATION
    )


def unobserved(_event: Event) -> None:
    """What a socket does with its own events when nobody counts them."""
