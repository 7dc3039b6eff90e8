"""What both front doors share: conversations, request parsing and the event stream of a turn.

Every JSON the agent reads (a ``POST /invocations`` body, a ``/ws`` message) goes through
``decode_json``: a decoder failure of any kind, ``RecursionError`` included, is the typed
``invalid_json``. Limits: docs/agent.md, "Limits".
"""

from __future__ import annotations

import json
import time

from starlette.requests import Request
from starlette.responses import JSONResponse
from strands import Agent

from agent.config import AgentConfig
from agent.conversations import Conversations
from agent.llm import SYSTEM_PROMPT, make_model
from agent.pipeline import BadRequest, Turn, parse_request
from observability.request_body import read_bounded
from tts_protocol.validation import parse_voice

DEFAULT_CONVERSATION = "default"
MAX_BODY_BYTES = 64 * 1024  # a POST /invocations body; the longest prompt fits many times
MAX_JSON_DEPTH = 32  # a request is flat; this keeps any later re-parse off the stack limit
STATUS = {"body_too_large": 413}  # HTTP status of a refusal; any other is 400


def decode_json(data: str | bytes, what: str) -> object:
    """``data`` as JSON; raises ``BadRequest("invalid_json")`` for anything else."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError; nesting
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise BadRequest("invalid_json", f"{what} is not JSON: {reason}") from exc
    if json_depth(value) > MAX_JSON_DEPTH:
        raise BadRequest("invalid_json", f"{what} is nested over {MAX_JSON_DEPTH} levels deep")
    return value


def json_depth(value: object) -> int:
    """How deeply arrays and objects nest in ``value`` (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


async def read_body(request: Request) -> bytes:
    """The request's body, read no further than ``MAX_BODY_BYTES``; raises ``BadRequest``."""
    body = await read_bounded(request, MAX_BODY_BYTES)
    if body is None:
        raise BadRequest("body_too_large", f"the body is over {MAX_BODY_BYTES} bytes")
    return body


def refusal(exc: BadRequest) -> JSONResponse:
    """The HTTP answer to a refused request: its typed error, 413 or 400."""
    return JSONResponse(exc.to_json(), status_code=STATUS.get(exc.code, 400))


class VoiceAgent:
    """The voice agent behind the AgentCore app and the dev server."""

    def __init__(self, config: AgentConfig | None = None) -> None:
        self.config = config or AgentConfig.from_env()
        make_model(self.config.model)  # fail fast on a bad model spec
        self.conversations = Conversations(self._new_agent, self.config.transport())

    def _new_agent(self) -> Agent:
        return Agent(
            model=make_model(self.config.model), system_prompt=SYSTEM_PROMPT, callback_handler=None
        )

    async def start(self, payload: object, conversation: str | None = None) -> Turn:
        """Validate ``payload`` and start its turn; raises ``BadRequest``."""
        received_at = time.perf_counter()
        request = parse_request(payload)
        target = self.conversations.get(conversation or DEFAULT_CONVERSATION)
        if request.voice is not None:
            await self._check_voice(target.key, request.voice)
        return await target.start_turn(request, received_at)

    async def _check_voice(self, key: str, voice: str) -> None:
        """Refuse a voice the conversation's TTS server does not have (its ``ready.voices``)."""
        try:
            ready = (await self.conversations.get(key).session()).ready
        except Exception:
            return  # speech is down: the turn reports it and still streams text
        missing = [name for name, _ in parse_voice(voice) if name not in ready.voices]
        if missing:  # a blend (``a(0.7)+b(0.3)``) needs each of its voices
            raise BadRequest("unknown_voice", f"unknown voice {voice!r}; try {ready.voices}")

    async def aclose(self) -> None:
        await self.conversations.aclose()
