"""``ServerProtocol``: the server side of protocol v1 as a state machine, with no I/O.

Feed it each frame the client sends (``receive``, text or binary), get typed actions back; the
I/O layer tells it what its synthesis worker does (``next_step``, ``segment_ended``). It keeps
the connection's rules of the wire in one place:

- a client message arrives in a text *or* a binary frame (SageMaker delivers client messages
  as binary frames); one that cannot be decoded is refused with its typed code;
- a ``speak`` is refused, in this order: ``shutting_down`` while the server drains,
  ``invalid_message`` after ``close``, ``invalid_message`` for an id already queued or in
  progress, ``queue_full`` when ``max_queue`` segments wait (the one in progress not counted);
- a ``speak`` that passes is handed out as ``QueueSegment``: the server checks what only it
  can (the voice, the server-wide queue), then calls ``accept`` or refuses it itself. Nothing
  changes here until ``accept``, so a refusal by the server leaves this state right;
- segments go to synthesis one at a time, in the order they were accepted;
- ``cancel`` with an id drops that segment from the queue or stops it in progress; without
  an id, everything queued and in progress; an id neither queued nor in progress is ignored;
- after ``close`` the queue is finished, then the connection closes normally; while the server
  drains, likewise, then it closes as restarting.
"""

from __future__ import annotations

from dataclasses import dataclass

from tts_protocol.constants import DEFAULT_MAX_TEXT_CHARS
from tts_protocol.errors import ErrorCode, ProtocolError
from tts_protocol.messages import Cancel, Error, Speak, decode_client

DEFAULT_MAX_QUEUE = 64  # segments waiting on one connection, the one in synthesis not counted

# --- actions -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueSegment:
    """``speak`` passed the connection's rules: check the rest, then ``accept`` or refuse it."""

    speak: Speak


@dataclass(frozen=True, slots=True)
class Refuse:
    """Send ``error``: the frame is refused, and the connection goes on."""

    error: Error


@dataclass(frozen=True, slots=True)
class CancelQueued:
    """These queued segments were cancelled (they left the queue): reply ``cancelled`` to each."""

    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CancelCurrent:
    """Stop the segment in progress; its ``cancelled`` goes out when it has stopped."""

    id: str


@dataclass(frozen=True, slots=True)
class Finish:
    """Nothing is queued or in progress and nothing more will be: end the connection.

    ``draining``: the server is shutting down (close as restarting); else the client sent
    ``close``, or is gone (close normally).
    """

    draining: bool


Action = QueueSegment | Refuse | CancelQueued | CancelCurrent

# --- the protocol ------------------------------------------------------------------------


class ServerProtocol:
    """The server's half of protocol v1 on one connection."""

    def __init__(
        self, max_queue: int = DEFAULT_MAX_QUEUE, max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    ) -> None:
        self.max_queue = max_queue
        self.max_text_chars = max_text_chars
        self._queue: dict[str, Speak] = {}  # accepted, waiting for synthesis, in order
        self._in_progress: str | None = None
        self._closing = False
        self._draining = False

    @property
    def closing(self) -> bool:
        """True once ``close`` was received (or the peer is gone): no more frames are read."""
        return self._closing

    @property
    def draining(self) -> bool:
        """True once the server began to shut down."""
        return self._draining

    @property
    def queued(self) -> tuple[str, ...]:
        """The ids waiting for synthesis, in order."""
        return tuple(self._queue)

    @property
    def in_progress(self) -> str | None:
        """The id in synthesis, if any."""
        return self._in_progress

    # --- the client's side ---------------------------------------------------------------

    def receive(self, frame: str | bytes) -> list[Action]:
        """The actions for one client frame (``str`` from a text frame, ``bytes`` from binary)."""
        try:
            message = decode_client(frame, max_text_chars=self.max_text_chars)
            if isinstance(message, Speak):
                self._check(message)
                return [QueueSegment(message)]
            if isinstance(message, Cancel):
                return self._cancel(message.id)
            self._closing = True
            return []
        except ProtocolError as exc:
            return [Refuse(Error.of(exc))]

    def _check(self, speak: Speak) -> None:
        """Raise the ``ProtocolError`` that refuses ``speak`` on this connection, if one does."""
        if self._draining:
            why = "the server is shutting down; send it again on a new connection"
            raise ProtocolError(ErrorCode.SHUTTING_DOWN, why, speak.id)
        if self._closing:
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, "connection is closing", speak.id)
        if speak.id == self._in_progress or speak.id in self._queue:
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, "duplicate segment id", speak.id)
        if len(self._queue) >= self.max_queue:
            why = f"{self.max_queue} segments are already queued"
            raise ProtocolError(ErrorCode.QUEUE_FULL, why, speak.id)

    def accept(self, speak: Speak) -> None:
        """Queue ``speak``: ``receive`` handed it out as ``QueueSegment``, the server admitted it.

        Raises ``ProtocolError`` if the connection's rules refuse it (it was not handed out).
        """
        self._check(speak)
        self._queue[speak.id] = speak

    def _cancel(self, segment_id: str | None) -> list[Action]:
        if segment_id is None:
            doomed = tuple(self._queue)
        else:
            doomed = (segment_id,) if segment_id in self._queue else ()
        for id in doomed:
            del self._queue[id]
        actions: list[Action] = [CancelQueued(doomed)] if doomed else []
        if self._in_progress is not None and segment_id in (None, self._in_progress):
            actions.append(CancelCurrent(self._in_progress))
        return actions

    # --- the server's side ---------------------------------------------------------------

    def next_step(self) -> Speak | Finish | None:
        """What the worker does next: synthesize this segment (now in progress), end, or wait.

        Raises ``RuntimeError`` while a segment is in progress: one goes at a time.
        """
        if self._in_progress is not None:
            raise RuntimeError(f"segment {self._in_progress!r} is still in progress")
        if self._queue:
            speak = self._queue.pop(next(iter(self._queue)))
            self._in_progress = speak.id
            return speak
        if self._closing or self._draining:
            return Finish(draining=not self._closing)
        return None

    def segment_ended(self) -> None:
        """The segment in progress got its terminal reply (``end``, ``cancelled`` or ``error``)."""
        self._in_progress = None

    def drain(self) -> None:
        """The server is shutting down: refuse new segments, finish once the queue is done."""
        self._draining = True

    def abort(self) -> tuple[str, ...]:
        """The peer is gone: drop the queue (the ids dropped, which get no reply) and close."""
        dropped = tuple(self._queue)
        self._queue.clear()
        self._closing = True
        return dropped
