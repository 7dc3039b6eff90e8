"""What both front doors share: the ``VoiceAgent``, its conversations, and the start of a turn."""

from __future__ import annotations

import time

from agent.config import AgentConfig
from agent.core.conversations import Conversations
from agent.core.factory import VoiceFactory
from agent.core.tool_calls import Filler
from agent.core.turn import Turn
from agent.requests import BadRequest, TurnRequest
from tts_protocol import VoiceMix, voice_name

DEFAULT_CONVERSATION = "default"


class VoiceAgent:
    """The voice agent behind the AgentCore app and the dev server: each conversation's
    agent is built by ``config.agent_factory`` (yours, docs/your_agent.md), or is the built-in
    one on ``config.model``."""

    def __init__(self, config: AgentConfig | None = None) -> None:
        self.config = config or AgentConfig.from_env()
        # fails fast: a bad model spec, a factory that cannot build an Agent
        self.factory = VoiceFactory.check(self.config.agent_factory, self.config.model)
        filler = self.config.tool_filler
        self.conversations = Conversations(
            self.factory,
            self.config.transport(),
            filler=Filler(filler, self.config.tool_filler_s) if filler else None,
        )

    async def start(
        self,
        request: TurnRequest,
        conversation: str | None = None,
        received_at: float | None = None,
    ) -> Turn:
        """Start ``request``'s turn (``received_at``: when it came, ``time.perf_counter``);
        raises ``BadRequest`` for a voice the TTS server does not have."""
        received_at = time.perf_counter() if received_at is None else received_at
        target = self.conversations.get(conversation or DEFAULT_CONVERSATION)
        if request.voice is not None:
            await self._check_voice(request.voice)
        return await target.start_turn(request, received_at)

    async def _check_voice(self, voice: VoiceMix) -> None:
        """Refuse a voice the TTS server does not have (its ``ready.voices``)."""
        try:
            ready = await self.conversations.pool.ready()
        except Exception:
            return  # speech is down: the turn reports it and still streams text
        missing = [name for name, _ in voice if name not in ready.voices]
        if missing:  # a blend (``a(0.7)+b(0.3)``) needs each of its voices
            message = f"unknown voice {voice_name(voice)!r}; try {', '.join(ready.voices)}"
            raise BadRequest("unknown_voice", message)

    async def aclose(self) -> None:
        await self.conversations.aclose()
