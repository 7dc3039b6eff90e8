"""AG-UI at the front doors (``VOICE_AGENT_PROTOCOL=agui``): ``POST /invocations`` answers a
``RunAgentInput`` with an SSE stream of AG-UI events, ``/ws`` with text frames
(``agent.leg.agui_socket``); docs/agui.md.

Both doors call ``agui_invocation`` with the decoded body (read up to ``MAX_RUN_INPUT_BYTES``: a
run carries the thread's history). A body that is not a ``RunAgentInput`` is a typed 400 before
any stream (``invalid_run_input``, or the body's own ``invalid_json``, ``body_too_large``...); a
run that cannot start (no user message, a bad ``forwardedProps.speech``, an unknown voice) is a
stream of ``RUN_STARTED`` then ``RUN_ERROR`` with the same codes. Its turn is the one our route
runs, on the same ``FrontDoor``: same pipeline, same metrics, same cancellation when the client
goes away.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from ag_ui.core import BaseEvent
from starlette.responses import Response

from agent.doors.wiring import FrontDoor, Relay, in_place
from agent.leg.agui import AguiTranslator, agui_events, encode_agui, refused
from agent.leg.agui_input import parse_run_input, run_of
from agent.leg.sse import event_stream
from agent.requests import BadRequest, refusal


async def _listed(events: list[BaseEvent]) -> AsyncGenerator[BaseEvent, None]:
    for event in events:
        yield event


async def agui_invocation(
    door: FrontDoor, payload: object, relay: Relay = in_place, keepalive_s: float = 0
) -> Response:
    """The answer to one ``POST /invocations`` in AG-UI: the run's event stream, or a refusal."""
    try:
        run_input = parse_run_input(payload)
    except BadRequest as exc:
        return refusal(exc)
    try:
        run = run_of(run_input)
        turn_events = await door.stream_turn(run.request, run.thread_id, relay)
    except BadRequest as exc:
        events = refused(run_input.thread_id, run_input.run_id, exc.code, exc.message)
        return event_stream(_listed(events), encoder=encode_agui)
    translated = agui_events(turn_events, AguiTranslator(run))
    return event_stream(translated, keepalive_s, encoder=encode_agui)
