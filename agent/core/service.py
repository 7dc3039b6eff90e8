"""What both front doors share: the ``VoiceAgent``, its conversations, and the start of a turn."""

from __future__ import annotations

import time
from dataclasses import replace

from agent.config import AgentConfig
from agent.core.conversations import Conversations
from agent.core.factory import VoiceFactory
from agent.core.tool_calls import Filler
from agent.core.turn import Turn
from agent.requests import BadRequest, PlaybackReport, TurnRequest
from tts_protocol import VoiceMix, voice_name
from tts_protocol.voices import OPENAI_VOICES, resolve_voice

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
            request = replace(request, voice=await self.check_voice(request.voice))
        return await target.start_turn(request, received_at)

    async def withdraw(
        self, turn_id: str, conversation: str | None = None, heard: PlaybackReport | None = None
    ) -> str | None:
        """Forget a turn nobody heard, and return its prompt; None where it stays
        (``Conversation.withdraw_unheard``)."""
        target = self.conversations.get(conversation or DEFAULT_CONVERSATION)
        return await target.withdraw_unheard(turn_id, heard)

    async def check_voice(self, voice: VoiceMix) -> VoiceMix:
        """``voice`` as the TTS server will take it: an OpenAI name (``nova``) the server lacks
        as the voice it stands for (``tts_protocol.voices``, as the server's ``/v1`` maps it).
        Raises ``BadRequest`` (``unknown_voice``) for a voice it does not have (its
        ``ready.voices``); while speech is down, ``voice`` as it is."""
        try:
            ready = await self.conversations.pool.ready()
        except Exception:
            return voice  # speech is down: the turn reports it and still streams text
        resolved = resolve_voice(voice, ready.voices, ready.default_voice)
        if any(name not in ready.voices for name, _ in resolved):  # a blend needs each voice
            names = ", ".join((*ready.voices, *OPENAI_VOICES))
            message = f"unknown voice {voice_name(voice)!r}; try {names}"
            raise BadRequest("unknown_voice", message)
        return resolved

    async def aclose(self) -> None:
        await self.conversations.aclose()
