"""The protocol's typed errors: every code the server may send, and the exception behind it."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Every error code the server may send."""

    INVALID_JSON = "invalid_json"
    INVALID_MESSAGE = "invalid_message"
    EMPTY_TEXT = "empty_text"
    TEXT_TOO_LONG = "text_too_long"
    UNKNOWN_VOICE = "unknown_voice"
    QUEUE_FULL = "queue_full"
    BUSY = "busy"  # the server is at capacity: try again later (the client backs off)
    SYNTHESIS_FAILED = "synthesis_failed"
    UNSUPPORTED_TEXT = "unsupported_text"  # letters the English G2P cannot speak (HTTP: 422)
    INTERNAL = "internal"
    BODY_TOO_LARGE = "body_too_large"  # HTTP only: a POST /invocations body over 64 KiB (413)
    # The server is draining before it exits: send again on a new connection (close 1012).
    SHUTTING_DOWN = "shutting_down"
    # Close reasons (``"<code>: <message>"``), not ``error`` messages: the server closes the
    # connection because the client sent no frame for ``idle_timeout_s`` (1000), or took none
    # of the server's frames for ``send_timeout_s`` (1008).
    IDLE_TIMEOUT = "idle_timeout"
    SEND_TIMEOUT = "send_timeout"


class ProtocolError(Exception):
    """A message that cannot be accepted; ``id`` names the segment when it is known."""

    def __init__(self, code: ErrorCode, message: str, id: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.id = id
