"""``ClientProtocol``: the client side of protocol v1 as a state machine, with no I/O.

Feed it what the server sends (``receive``), get typed events back; ask it what to send
(``take_speaks``, ``cancel``, ``cancel_all``) and send that however the I/O layer likes. It
keeps the rules of the wire in one place:

- the first frame of a connection is ``ready`` (protocol 1), or the connection failed;
- binary audio frames carry no id: they belong to the segment of the last ``start``;
- every segment sent gets exactly one terminal reply (``end``, ``cancelled`` or ``error``);
- at most ``max_in_flight`` segments wait for a terminal reply on one connection;
- after a reconnect, every segment without a terminal reply is sent again, and the audio the
  caller already has (counted in bytes) is skipped, so the caller sees each byte once;
- ``marks`` (word timings, if the ``speak`` asked) belong to the segment of the last ``start``;
  after a reconnect the words the caller already has are skipped, as its audio is;
- audio of a segment the caller cancelled is dropped;
- ``busy`` and ``shutting_down`` (the server drains before it exits) for a segment are not
  terminal: a ``busy`` one is held (``SegmentDeferred``) until ``retry_deferred``, a refused
  one is sent again on the next connection; either instead of ``ready`` is a
  ``ConnectionFailed(busy=True)``: try again later.

Anything else the server does is a ``ConnectionFailed(violation=True)``: drop the connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tts_protocol.constants import PROTOCOL_VERSION
from tts_protocol.errors import ErrorCode, ProtocolError
from tts_protocol.messages import (
    Cancel,
    Cancelled,
    End,
    Error,
    Marks,
    Ready,
    ServerMessage,
    Speak,
    Start,
    Word,
    decode_server,
)

DEFAULT_MAX_IN_FLIGHT = 16

# --- events ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Connected:
    """The server's ``ready`` arrived: segments may be sent."""

    ready: Ready


@dataclass(frozen=True, slots=True)
class SegmentStarted:
    """Audio of ``segment_id`` follows."""

    segment_id: str


@dataclass(frozen=True, slots=True)
class Audio:
    """New PCM (s16le mono) of ``segment_id``: never audio the caller was given before."""

    segment_id: str
    pcm: bytes


@dataclass(frozen=True, slots=True)
class SegmentMarked:
    """Timings of new words of ``segment_id`` (ms from its audio's start), before their audio."""

    segment_id: str
    words: tuple[Word, ...]


@dataclass(frozen=True, slots=True)
class SegmentEnded:
    """``segment_id`` is complete; ``end`` has the server's sample count and synthesis time."""

    segment_id: str
    end: End


@dataclass(frozen=True, slots=True)
class SegmentCancelled:
    """The server confirmed the cancel of ``segment_id``."""

    segment_id: str


@dataclass(frozen=True, slots=True)
class SegmentErrorReported:
    """The server's ``error`` for ``segment_id`` (its terminal reply); the connection goes on."""

    segment_id: str
    code: ErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class SegmentDeferred:
    """The server was too busy to queue ``segment_id``; it is held until ``retry_deferred``."""

    segment_id: str
    message: str


@dataclass(frozen=True, slots=True)
class ServerErrorReported:
    """An ``error`` that no segment of ours owns (a malformed frame of ours, say)."""

    code: ErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class ConnectionFailed:
    """The connection is unusable: the server refused it, or broke the protocol (``violation``).

    Later frames of this connection are ignored; open a new one (after a backoff if ``busy``:
    the server refused the connection because it is at capacity).
    """

    reason: str
    violation: bool
    busy: bool = False


ClientEvent = (
    Connected
    | SegmentStarted
    | Audio
    | SegmentMarked
    | SegmentEnded
    | SegmentCancelled
    | SegmentErrorReported
    | SegmentDeferred
    | ServerErrorReported
    | ConnectionFailed
)

# --- state -------------------------------------------------------------------------------


class ConnectionState(StrEnum):
    """Where the current connection is."""

    CLOSED = "closed"  # no connection
    CONNECTING = "connecting"  # opened, waiting for `ready`
    OPEN = "open"
    FAILED = "failed"  # broken: frames are ignored until the next connection


@dataclass(slots=True)
class _PendingSegment:
    speak: Speak
    delivered: int = 0  # audio bytes given to the caller, over every attempt
    skip: int = 0  # bytes of the current attempt that an earlier attempt delivered
    words: int = 0  # marked words given to the caller, over every attempt
    skip_words: int = 0  # words of the current attempt that an earlier attempt delivered
    connection: int = 0  # the connection it was last sent on (0: not sent)
    cancelled: bool = False
    held: bool = False  # refused as busy: not sent again until retry_deferred
    refused_on: int = 0  # the connection that refused it as shutting down: not sent there again


class ClientProtocol:
    """The client's half of protocol v1 across the connections of one session."""

    def __init__(self, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.max_in_flight = max_in_flight
        self.state = ConnectionState.CLOSED
        self.ready: Ready | None = None  # the latest connection's `ready`
        self._segments: dict[str, _PendingSegment] = {}  # no terminal reply yet, in speak order
        self._connection = 0  # number of the current connection
        self._current: _PendingSegment | None = None  # the segment whose audio is arriving
        self._in_flight = 0  # sent on the current connection, no terminal reply yet

    @property
    def pending(self) -> int:
        """Segments without a terminal reply (sent or waiting to be sent)."""
        return len(self._segments)

    @property
    def in_flight(self) -> int:
        """Segments sent on the current connection that have no terminal reply yet."""
        return self._in_flight

    def is_pending(self, segment_id: str) -> bool:
        """True while ``segment_id`` has no terminal reply and was not dropped."""
        return segment_id in self._segments

    # --- connections ---------------------------------------------------------------------

    def connection_opened(self) -> None:
        """A new connection is open; its first frame must be ``ready``."""
        self._forget_connection()
        self._connection += 1
        self.state = ConnectionState.CONNECTING

    def connection_lost(self) -> None:
        """The connection is gone: what was cancelled on it is over, the rest will be re-sent."""
        self._forget_connection()
        self.state = ConnectionState.CLOSED

    def _forget_connection(self) -> None:
        for id, segment in list(self._segments.items()):
            if segment.cancelled and segment.connection == self._connection:
                del self._segments[id]
        self._current = None
        self._in_flight = 0

    def _sent_here(self, segment: _PendingSegment) -> bool:
        return self.state is ConnectionState.OPEN and segment.connection == self._connection

    # --- the caller's side ---------------------------------------------------------------

    def speak(self, speak: Speak) -> None:
        """Queue ``speak``; ``take_speaks`` hands it out when the connection has room."""
        if speak.id in self._segments:
            raise ValueError(f"segment {speak.id!r} is already pending")
        self._segments[speak.id] = _PendingSegment(speak)

    def take_speaks(self) -> list[Speak]:
        """The ``speak`` messages to send now, in order, within ``max_in_flight``."""
        if self.state is not ConnectionState.OPEN:
            return []
        out: list[Speak] = []
        for id, segment in list(self._segments.items()):
            if self._in_flight >= self.max_in_flight:
                break
            if self._connection in (segment.connection, segment.refused_on) or segment.held:
                continue
            if segment.cancelled:  # cancelled before it was ever sent here
                del self._segments[id]
                continue
            segment.connection = self._connection
            segment.skip = segment.delivered
            segment.skip_words = segment.words
            self._in_flight += 1
            out.append(segment.speak)
        return out

    def cancel(self, segment_id: str) -> Cancel | None:
        """Cancel one segment: its audio is dropped from now on.

        Returns the ``cancel`` to send, or None when the server never had it (it is dropped).
        """
        segment = self._segments.get(segment_id)
        if segment is None or segment.cancelled:
            return None
        segment.cancelled = True
        if self._sent_here(segment):
            return Cancel(id=segment_id)
        del self._segments[segment_id]
        return None

    def cancel_all(self) -> tuple[list[str], Cancel | None]:
        """Cancel every segment: the ids cancelled now, and the one ``cancel`` to send (if any)."""
        ids: list[str] = []
        sent = False
        for id, segment in list(self._segments.items()):
            if segment.cancelled:
                continue
            segment.cancelled = True
            ids.append(id)
            if self._sent_here(segment):
                sent = True
            else:
                del self._segments[id]
        return ids, Cancel(id=None) if sent else None

    def retry_deferred(self) -> int:
        """Release the segments held after ``busy``: ``take_speaks`` sends them again, in order."""
        held = [segment for segment in self._segments.values() if segment.held]
        for segment in held:
            segment.held = False
        return len(held)

    def fail_all(self) -> list[str]:
        """Give up on every pending segment (the session failed); returns their ids."""
        ids = list(self._segments)
        self._segments.clear()
        self._current = None
        self._in_flight = 0
        return ids

    # --- the server's side ---------------------------------------------------------------

    def receive(self, frame: str | bytes) -> list[ClientEvent]:
        """Events for one frame from the server: ``str`` is control, ``bytes`` is audio."""
        if self.state is ConnectionState.FAILED or self.state is ConnectionState.CLOSED:
            return []
        try:
            if self.state is ConnectionState.CONNECTING:
                return [self._handshake(frame)]
            if isinstance(frame, bytes):
                return self._audio(frame)
            return self._control(self._decode(frame))
        except _Violation as exc:
            self.state = ConnectionState.FAILED
            return [ConnectionFailed(str(exc), violation=True)]

    def _handshake(self, frame: str | bytes) -> ClientEvent:
        if isinstance(frame, bytes):
            raise _Violation("expected 'ready', got a binary frame")
        message = self._decode(frame)
        if isinstance(message, Error):
            self.state = ConnectionState.FAILED
            return ConnectionFailed(
                f"server refused: {message.code}: {message.message}",
                violation=False,
                busy=message.code in (ErrorCode.BUSY, ErrorCode.SHUTTING_DOWN),
            )
        if not isinstance(message, Ready):
            raise _Violation(f"expected 'ready', got {message.type!r}")
        if message.protocol != PROTOCOL_VERSION:
            raise _Violation(f"server speaks protocol {message.protocol}, not {PROTOCOL_VERSION}")
        self.state = ConnectionState.OPEN
        self.ready = message
        return Connected(message)

    def _audio(self, data: bytes) -> list[ClientEvent]:
        segment = self._current
        if segment is None:
            raise _Violation("audio frame outside a segment")
        if segment.skip:
            dropped = min(segment.skip, len(data))
            segment.skip -= dropped
            data = data[dropped:]
        if segment.cancelled or not data:
            return []
        segment.delivered += len(data)
        return [Audio(segment.speak.id, data)]

    def _control(self, message: ServerMessage) -> list[ClientEvent]:
        if isinstance(message, Start):
            segment = self._owned(message.id)
            if self._current is not None:
                raise _Violation(f"'start' {message.id} before 'end' {self._current.speak.id}")
            self._current = segment
            return [SegmentStarted(message.id)]
        if isinstance(message, Marks):
            return self._marks(message)
        if isinstance(message, Error) and (message.id is None or message.id not in self._segments):
            return [ServerErrorReported(message.code, message.message)]
        if not isinstance(message, End | Cancelled | Error):
            raise _Violation(f"unexpected {message.type!r} frame")
        segment = self._owned(message.id)
        self._in_flight -= 1
        if isinstance(message, Error) and message.code is ErrorCode.BUSY:
            segment.connection, segment.held = 0, True  # the server never queued it
            return [SegmentDeferred(message.id, message.message)]
        if isinstance(message, Error) and message.code is ErrorCode.SHUTTING_DOWN:
            segment.connection, segment.refused_on = 0, self._connection  # the next one takes it
            return []
        del self._segments[message.id]
        if self._current is segment:
            self._current = None
        if isinstance(message, End):
            return [SegmentEnded(message.id, message)]
        if isinstance(message, Cancelled):
            return [SegmentCancelled(message.id)]
        return [SegmentErrorReported(message.id, message.code, message.message)]

    def _marks(self, message: Marks) -> list[ClientEvent]:
        segment = self._owned(message.id)
        if segment is not self._current:
            raise _Violation(f"'marks' for {message.id} outside its segment")
        skipped = min(segment.skip_words, len(message.words))
        segment.skip_words -= skipped
        words = message.words[skipped:]
        if segment.cancelled or not words:
            return []
        segment.words += len(words)
        return [SegmentMarked(message.id, words)]

    def _owned(self, segment_id: str | None) -> _PendingSegment:
        """The segment a reply names; it must have been sent on this connection."""
        segment = self._segments.get(segment_id or "")
        if segment is None or segment.connection != self._connection:
            raise _Violation(f"reply for unknown segment {segment_id!r}")
        return segment

    @staticmethod
    def _decode(frame: str) -> ServerMessage:
        try:
            return decode_server(frame)
        except ProtocolError as exc:
            raise _Violation(f"invalid control frame: {exc.message}") from exc


class _Violation(Exception):
    """The server broke protocol v1 (internal: surfaces as ``ConnectionFailed``)."""
