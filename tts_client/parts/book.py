"""``SegmentBook``: the segments a session owes, as ``ClientProtocol`` and the caller see them.

The protocol keeps the wire's record of each segment (where it was sent, how much of its audio
the caller has); the caller reads its ``SegmentStream``. The book keeps the two in step: a
segment has a stream here exactly while the protocol holds it pending.
"""

from __future__ import annotations

from tts_client.errors import TTSError
from tts_client.segment import SegmentStatus, SegmentStream
from tts_protocol import Cancel, ClientProtocol, Speak


class SegmentBook:
    """The protocol's pending segments, each with the stream its caller reads."""

    def __init__(self, max_in_flight: int) -> None:
        self.protocol = ClientProtocol(max_in_flight)
        self._streams: dict[str, SegmentStream] = {}

    def add(self, speak: Speak) -> SegmentStream:
        """Queue ``speak`` in the protocol; returns the stream of its audio."""
        segment = SegmentStream(speak.id, speak.text, speak.voice, speak.speed)
        self.protocol.speak(speak)
        self._streams[speak.id] = segment
        return segment

    def stream(self, segment_id: str) -> SegmentStream:
        """The stream of a pending segment."""
        return self._streams[segment_id]

    def pop(self, segment_id: str) -> SegmentStream:
        """The stream of a segment that got its terminal reply, forgotten here."""
        return self._streams.pop(segment_id)

    def unfinished(self) -> list[SegmentStream]:
        """The streams without a terminal status."""
        return [segment for segment in self._streams.values() if not segment.done]

    def take_speaks(self) -> list[Speak]:
        """The ``speak`` messages to send now, in order (``ClientProtocol.take_speaks``)."""
        speaks = self.protocol.take_speaks()
        self.prune()
        return speaks

    def cancel(self, segment: SegmentStream) -> Cancel | None:
        """End ``segment``'s stream as cancelled; returns the ``cancel`` to send, if any."""
        segment.finish(SegmentStatus.CANCELLED)
        return self.protocol.cancel(segment.id)

    def cancel_all(self) -> Cancel | None:
        """End every unfinished stream as cancelled; returns the one ``cancel`` to send, if any."""
        ids, message = self.protocol.cancel_all()
        for id in ids:
            self._streams[id].finish(SegmentStatus.CANCELLED)
        return message

    def fail(self, segment_id: str, error: TTSError) -> None:
        """Give up on one segment the server never queued (held: dropped without a frame)."""
        self.protocol.cancel(segment_id)
        self._streams.pop(segment_id).finish(SegmentStatus.FAILED, error)

    def fail_all(self, error: TTSError) -> None:
        """Give up on every pending segment: each stream fails with ``error``."""
        for id in self.protocol.fail_all():
            self._streams[id].finish(SegmentStatus.FAILED, error)
        self._streams.clear()

    def connection_lost(self) -> None:
        """The live connection is gone: what was cancelled on it is over, the rest is re-sent."""
        self.protocol.connection_lost()
        self.prune()

    def prune(self) -> None:
        """Forget the streams of segments that the protocol dropped without a reply."""
        for id in [id for id in self._streams if not self.protocol.is_pending(id)]:
            del self._streams[id]
