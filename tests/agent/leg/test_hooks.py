"""``agent.leg.hooks``: which conversation a socket is, and the observer that counts nothing."""

from __future__ import annotations

from starlette.types import Message
from starlette.websockets import WebSocket

from agent.browser_leg import SESSION_HEADER
from agent.core.service import DEFAULT_CONVERSATION
from agent.events import TurnEnd
from agent.leg.hooks import conversation_of, unobserved


async def _receive() -> Message:
    return {"type": "websocket.connect"}


async def _send(_message: Message) -> None:
    pass


def socket(headers: dict[str, str], query: str = "") -> WebSocket:
    """A Starlette WebSocket over a scope as uvicorn hands it, before it is accepted."""
    scope = {
        "type": "websocket",
        "path": "/ws",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "query_string": query.encode(),
    }
    return WebSocket(scope, _receive, _send)


def test_the_session_header_names_the_conversation_before_the_query() -> None:
    both = socket({SESSION_HEADER: "from-header"}, f"{SESSION_HEADER}=from-query")
    assert conversation_of(both) == "from-header"


def test_a_browser_names_it_in_the_query_as_it_cannot_set_headers() -> None:
    assert conversation_of(socket({}, f"{SESSION_HEADER}=tab-1")) == "tab-1"


def test_without_either_it_is_the_default_conversation_and_empty_names_none() -> None:
    assert conversation_of(socket({})) == DEFAULT_CONVERSATION
    assert conversation_of(socket({SESSION_HEADER: ""}, f"{SESSION_HEADER}=")) == "default"
    assert DEFAULT_CONVERSATION == "default"


def test_nobody_observes_a_sockets_own_events_by_default() -> None:
    assert unobserved(TurnEnd()) is None
