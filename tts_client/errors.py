"""The client's exception hierarchy: every failure a caller can see is a ``TTSError``."""

from __future__ import annotations

import logging
from collections.abc import Callable

from tts_protocol import ClientEvent, ConnectionFailed, ErrorCode

log = logging.getLogger("tts_client")


class TTSError(Exception):
    """Base class of every client error."""


class TTSConnectionError(TTSError):
    """The server could not be reached, or the connection was lost and not re-established."""


class TTSTimeout(TTSConnectionError):
    """The server did not answer (connect, ``ready`` or a reply) within the configured time."""


class TTSBusy(TTSConnectionError):
    """The server refused the connection because it is at capacity (``busy``, close 1013).

    Retried with backoff: within ``SessionConfig.busy_window`` when a session starts, like a
    lost connection (``reconnect_window``) when it reconnects.
    """


class TTSProtocolError(TTSError):
    """The server sent something protocol v1 does not allow."""


class ServerError(TTSError):
    """The server reported an ``error``; ``code`` is one of the protocol's error codes."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class SegmentFailed(ServerError):
    """The server failed one segment; the session goes on."""

    def __init__(self, code: ErrorCode, message: str, segment_id: str) -> None:
        super().__init__(code, message)
        self.segment_id = segment_id


class SessionClosed(TTSError):
    """The session is closed (by ``aclose`` or after an unrecoverable error)."""


class TransportUnavailable(TTSError):
    """A transport's optional dependency is missing (e.g. the SageMaker SDK on Python 3.11)."""


def raise_if_failed(event: ClientEvent) -> None:
    """Raise the protocol's ``ConnectionFailed`` as the client's typed error; other events pass."""
    if isinstance(event, ConnectionFailed):
        error = TTSProtocolError if event.violation else TTSConnectionError
        raise (TTSBusy if event.busy else error)(event.reason)


def report(error: TTSError, endpoint: str, on_error: Callable[[TTSError], None] | None) -> None:
    """Log an error that no one segment owns and pass it to ``on_error`` (if there is one)."""
    log.warning("%s: %s", endpoint, error)
    if on_error is not None:
        on_error(error)
