"""The client's messages on ``/ws``: JSON objects, from text or binary frames alike.

SageMaker and AgentCore hand a client's text to the container as binary frames, so a message
is read from either (the field report's lesson). Pure: bytes or text in, a checked ``dict`` or a
typed ``BadRequest`` out; ``agent/ws.py`` does the I/O.
"""

from __future__ import annotations

from typing import Any

from agent.browser_leg import MAX_MESSAGE_BYTES
from agent.requests import OPTION_FIELDS, BadRequest, check_fields, check_options, decode_json

MESSAGE_TYPES = (
    *("prompt", "cancel", "config", "heard"),
    *("listen", "listen.stop", "talk.start", "talk.end"),
)


def parse_message(data: str | bytes) -> dict[str, Any]:
    """A client message, from a text or a binary frame; raises ``BadRequest``."""
    # a lone surrogate (only a caller in-process can send one) is kept, then is not UTF-8 below
    raw = data.encode(errors="surrogatepass") if isinstance(data, str) else data
    if len(raw) > MAX_MESSAGE_BYTES:
        raise BadRequest("message_too_large", f"a message is at most {MAX_MESSAGE_BYTES} bytes")
    message = decode_json(raw, "the message")
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise BadRequest("invalid_message", "a message is a JSON object with a string 'type'")
    if message["type"] not in MESSAGE_TYPES:
        known = ", ".join(MESSAGE_TYPES)
        raise BadRequest("unknown_type", f"unknown message type {message['type']!r}; try {known}")
    return message


def parse_config(message: dict[str, Any]) -> dict[str, Any]:
    """The prompt defaults a ``config`` message sets, as sent; a field set to null is unset
    (None). Checked by the rules of a prompt's fields (``check_options``); a bad value is
    ``invalid_config``, its message the field's own rule."""
    check_fields(message, ("type", *OPTION_FIELDS))
    config = {field: message[field] for field in OPTION_FIELDS if field in message}
    try:
        check_options({field: value for field, value in config.items() if value is not None})
    except BadRequest as exc:
        raise BadRequest("invalid_config", exc.message) from exc
    return config
