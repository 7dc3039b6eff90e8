"""AG-UI over WebSocket (``/ws`` with ``VOICE_AGENT_PROTOCOL=agui``), its asyncio shell.

Each client message (text or binary frame) is one ``RunAgentInput`` as JSON; its run's AG-UI
events come back as text frames, one event's JSON each, from ``RUN_STARTED`` to ``RUN_FINISHED``
or ``RUN_ERROR``, each frame within AgentCore's limit (``agent.leg.agui_frames``: a long text
delta or tool input split, a long tool result or error message cut). The socket stays open for
the next run. A message that comes while a run streams cancels that run first: its stream ends with
``RUN_FINISHED`` (outcome ``cancelled``) before the message is answered, so the events of two
runs never interleave. A message that is not a run is answered by a lone ``RUN_ERROR`` (its
code: ``invalid_json``, ``invalid_run_input``, ``message_too_large``...), or by ``RUN_STARTED``
and ``RUN_ERROR`` once its ids could be read; the socket goes on. A client that goes away stops
its run's turn at once, as on our own ``/ws``. With no message and no run for ``idle_s``, the
socket is closed (1000, reason ``idle_timeout``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator

from ag_ui.core import BaseEvent, RunErrorEvent
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from agent.browser_leg import IDLE_CLOSE
from agent.leg.agui import AguiTranslator, agui_events, refused
from agent.leg.agui_frames import agui_frames
from agent.leg.agui_input import MAX_RUN_INPUT_BYTES, parse_run_input, run_of
from agent.leg.hooks import TurnStarter
from agent.requests import BadRequest, decode_json


class AguiSocket:
    """One client's AG-UI socket: runs in order, at most one streaming."""

    def __init__(self, websocket: WebSocket, start_turn: TurnStarter, idle_s: float) -> None:
        self.idle_s = idle_s
        self._websocket = websocket
        self._start_turn = start_turn
        self._task: asyncio.Task[None] | None = None
        self._translator: AguiTranslator | None = None
        self._used_at = 0.0  # the loop's clock at the last message or the last run's end

    async def serve(self) -> None:
        """Accept, then answer each message with its run until the client goes or idles."""
        await self._websocket.accept()
        self._touch()
        try:
            with contextlib.suppress(WebSocketDisconnect):  # the client went: a normal end
                while (received := await self._receive()) is not None:
                    if received["type"] == "websocket.disconnect":
                        return
                    await self._stop()
                    text = received.get("text")
                    await self._answer(text if text is not None else received.get("bytes") or b"")
                await self._websocket.close(IDLE_CLOSE, "idle_timeout")
        finally:
            if (task := self._task) is not None:
                task.cancel()  # its turn stops: nobody is there to hear it
                await asyncio.wait([task])
                if not task.cancelled():
                    task.exception()  # retrieved: a send to a client gone is no news

    @property
    def streaming(self) -> bool:
        """A run's events are being sent."""
        return self._task is not None and not self._task.done()

    async def _receive(self) -> dict[str, object] | None:
        """The next message, or None once nothing came and nothing ran for ``idle_s``."""
        while True:
            idle = self._now() - self._used_at
            wait = self.idle_s if self.streaming else self.idle_s - idle
            if wait <= 0:
                return None
            with contextlib.suppress(TimeoutError):
                received = await asyncio.wait_for(self._websocket.receive(), wait)
                self._touch()
                return dict(received)

    def _touch(self) -> None:
        self._used_at = self._now()

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()

    async def _answer(self, data: str | bytes) -> None:
        """Start the run ``data`` asks for, or refuse it."""
        if len(data.encode() if isinstance(data, str) else data) > MAX_RUN_INPUT_BYTES:
            await self._refuse(BadRequest("message_too_large", "a run over 1 MiB"))
            return
        try:
            run_input = parse_run_input(decode_json(data, "the message"))
        except BadRequest as exc:
            await self._refuse(exc)
            return
        try:
            run = run_of(run_input)
            turn_events = await self._start_turn(run.request, run.thread_id)
        except BadRequest as exc:
            for event in refused(run_input.thread_id, run_input.run_id, exc.code, exc.message):
                await self._send(event)
            return
        translator = self._translator = AguiTranslator(run)
        self._task = asyncio.create_task(self._push(agui_events(turn_events, translator)))
        self._task.add_done_callback(lambda _task: self._touch())  # idle counts from its end

    async def _push(self, events: AsyncGenerator[BaseEvent, None]) -> None:
        async with contextlib.aclosing(events):  # closing it stops the turn
            async for event in events:
                await self._send(event)

    async def _stop(self) -> None:
        """Cancel the streaming run, if any; its end (``cancelled``) goes out first."""
        task, translator = self._task, self._translator
        self._task = self._translator = None
        if task is None:
            return
        task.cancel()
        await asyncio.wait([task])
        if not task.cancelled() and isinstance(task.exception(), WebSocketDisconnect):
            raise WebSocketDisconnect(1006)
        for event in translator.cancel() if translator is not None else ():
            await self._send(event)

    async def _refuse(self, exc: BadRequest) -> None:
        await self._send(RunErrorEvent(message=exc.message, code=exc.code))

    async def _send(self, event: BaseEvent) -> None:
        """One event as text frames within AgentCore's frame limit (``agui_frames``: nearly
        always one); raises ``WebSocketDisconnect`` once the socket closed."""
        websocket = self._websocket
        for frame in agui_frames(event):
            if WebSocketState.DISCONNECTED in (websocket.client_state, websocket.application_state):
                raise WebSocketDisconnect(1006)
            await websocket.send_text(frame)
