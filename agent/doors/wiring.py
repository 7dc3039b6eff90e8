"""What both front doors share: one voice agent, what it listens with, its metrics, and how a
door starts an invocation's turn and serves ``/ws``.

The AgentCore app and the dev server differ only in their framework and in where a turn runs
(the SDK's worker loop, or in place); everything else is built here once, so that the two
cannot drift apart, and so that observation (``agent.doors.metrics``) never imports the leg.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.websockets import WebSocket

from agent.config import AgentConfig
from agent.core.service import VoiceAgent
from agent.core.turn import Turn
from agent.doors.metrics import AgentMetrics
from agent.leg.agui_socket import AguiSocket
from agent.leg.hooks import TurnEvents, TurnStarter, TurnWithdrawal, VoiceCheck
from agent.leg.socket import VoiceSocket
from agent.leg.turns import TurnRunner
from agent.listening.listener import listening_service
from agent.listening.recognizer import Recognizer
from agent.requests import PlaybackReport, TurnRequest, parse_request

Relay = Callable[[TurnEvents], TurnEvents]
"""How a turn's events reach the loop that streams them (none: they are there already)."""


def in_place(events: TurnEvents) -> TurnEvents:
    """A turn's events where they run: the dev server's loop is the response's."""
    return events


class FrontDoor:
    """One door's voice agent, listening and metrics; ``recognizer`` defaults to the
    process's shared Whisper (``agent.listening.whisper``)."""

    def __init__(self, config: AgentConfig | None, recognizer: Recognizer | None) -> None:
        self.voice_agent = VoiceAgent(config)
        self.config = self.voice_agent.config
        self.listening = listening_service(self.config.listening, recognizer)
        self.metrics = AgentMetrics()
        self.metrics.watch(self.listening.recognizer)

    async def start(self, payload: object, conversation: str) -> Turn:
        """The turn a decoded invocation body asks for; raises ``BadRequest``."""
        received_at = time.perf_counter()
        return await self.voice_agent.start(parse_request(payload), conversation, received_at)

    async def stream(
        self, payload: object, conversation: str, relay: Relay = in_place
    ) -> TurnEvents:
        """``POST /invocations``: the turn a decoded body asks for, run by a ``TurnRunner`` as the
        SSE response pulls it, observed; raises ``BadRequest`` before anything streams."""
        received_at = time.perf_counter()
        return await self.stream_turn(parse_request(payload), conversation, relay, received_at)

    async def stream_turn(
        self,
        request: TurnRequest,
        conversation: str,
        relay: Relay = in_place,
        received_at: float | None = None,
    ) -> TurnEvents:
        """``request``'s turn (our body's, or an AG-UI run's), pulled by an SSE response as
        ``stream`` says; ``received_at``: when it came (default now)."""
        received_at = time.perf_counter() if received_at is None else received_at

        async def start(request: TurnRequest, conversation: str) -> TurnEvents:
            turn = await self.voice_agent.start(request, conversation, received_at)
            return relay(turn.run())

        events = await TurnRunner(start, conversation).stream(request)
        return self.metrics.observe(events, "sse")

    @property
    def busy(self) -> bool:
        """A turn is running (AgentCore's ``HealthyBusy``)."""
        return self.voice_agent.conversations.busy

    def local_turns(self) -> TurnStarter:
        """Turns started and run on the running loop (the dev server)."""

        async def start(request: TurnRequest, conversation: str) -> TurnEvents:
            return (await self.voice_agent.start(request, conversation)).run()

        return start

    async def serve_socket(
        self,
        websocket: WebSocket,
        start_turn: TurnStarter,
        conversation: str,
        check_voice: VoiceCheck,
        withdraw: TurnWithdrawal,
    ) -> None:
        """Serve ``websocket`` as a ``VoiceSocket`` whose turns, refusals and listening events
        are observed, counted as a connected client; ``check_voice`` judges a ``config``'s
        voice, and ``withdraw`` forgets a speculative turn, where ``start_turn`` runs."""

        async def observed(request: TurnRequest, conversation: str) -> TurnEvents:
            return self.metrics.observe(await start_turn(request, conversation), "ws")

        async def counted(
            turn_id: str, conversation: str, heard: PlaybackReport | None
        ) -> str | None:
            prompt = await withdraw(turn_id, conversation, heard)
            if prompt is not None:
                self.metrics.withdrawn.inc()
            return prompt

        socket = VoiceSocket(
            websocket,
            observed,
            conversation,
            self.config.ws_idle_s,
            check_voice=check_voice,
            listening=self.listening,
            observe=self.metrics.socket_event,
            withdraw=counted,
        )
        with self.metrics.ws_clients.track_inprogress():
            await socket.serve()

    async def serve_agui_socket(self, websocket: WebSocket, start_turn: TurnStarter) -> None:
        """Serve ``websocket`` as an ``AguiSocket`` (AG-UI over ``/ws``) whose runs' turns,
        started by ``start_turn``, are observed, counted as a connected client."""

        async def observed(request: TurnRequest, conversation: str) -> TurnEvents:
            return self.metrics.observe(await start_turn(request, conversation), "ws")

        with self.metrics.ws_clients.track_inprogress():
            await AguiSocket(websocket, observed, self.config.ws_idle_s).serve()
