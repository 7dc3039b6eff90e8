"""Admission control: server-wide limits on the work in hand, and the counts.

One ``Admission`` per app. What costs is work, not sockets: a *session* is counted while it
has work, i.e. a WebSocket with segments queued or in synthesis, or an HTTP synthesis while it
runs, and at most ``max_sessions`` are. An idle WebSocket (its user reading or thinking) costs
a coroutine and a few kilobytes, so only the cheap, high ``max_connections`` bounds them.

- A WebSocket beyond ``max_connections`` is refused (``busy``, close code 1013) before its
  ``ready``.
- A ``speak`` on an idle WebSocket when ``max_sessions`` have work, or one that would put more
  than ``max_queued`` segments in the queues of all connections together, is answered with a
  ``busy`` error for that segment (the client retries it), and the connection goes on.
- An HTTP synthesis beyond ``max_sessions`` is answered 429 ``busy``.

The counts (connections, sessions, queued, in synthesis, refusals) are what ``/ping`` reports
and what the metrics read when scraped.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass

from tts_protocol import ErrorCode, ProtocolError

CPU_MAX_SESSIONS = 16  # one engine thread on a few cores: beyond this, sessions only wait
GPU_MAX_SESSIONS = 128  # batched synthesis on one GPU; the load aimed at is 32 at p95 250 ms
QUEUED_PER_SESSION = 4  # default server-wide queue: this many segments per allowed session
CONNECTIONS_PER_SESSION = 16  # default socket limit: idle users per session of work


def default_max_sessions(engine: str, device: str | None) -> int:
    """The session limit for an engine and device: the torch engine without ``cpu`` is a GPU."""
    on_gpu = engine == "torch" and device != "cpu"
    return GPU_MAX_SESSIONS if on_gpu else CPU_MAX_SESSIONS


@dataclass(slots=True)
class Admission:
    """Server-wide limits and the counts they are checked against (all on the event loop)."""

    max_sessions: int  # sessions with work at once
    max_queued: int  # segments queued, all connections together
    max_connections: int  # WebSockets open, idle ones included
    connections: int = 0  # WebSockets open now
    sessions: int = 0  # sessions with work now (WebSockets and HTTP syntheses)
    queued: int = 0  # segments waiting in every connection's queue
    in_flight: int = 0  # segments being synthesized now
    refused_connections: int = 0  # WebSockets refused as busy since start
    refused_sessions: int = 0  # work refused as busy (a first speak, an HTTP synthesis)
    refused_segments: int = 0  # speaks refused as busy because the queues were full

    def __post_init__(self) -> None:
        if min(self.max_sessions, self.max_queued, self.max_connections) < 1:
            raise ValueError("max_sessions, max_queued and max_connections must be at least 1")

    @classmethod
    def for_server(
        cls,
        engine: str,
        device: str | None,
        max_sessions: int | None,
        max_queued: int | None,
        max_connections: int | None = None,
    ) -> Admission:
        """Limits from settings; ``None`` takes the engine's and device's default."""
        sessions = max_sessions or default_max_sessions(engine, device)
        return cls(
            sessions,
            max_queued or QUEUED_PER_SESSION * sessions,
            max_connections or CONNECTIONS_PER_SESSION * sessions,
        )

    @classmethod
    def unlimited(cls) -> Admission:
        """Counts without limits (a connection outside the server, like the warm-up's)."""
        return cls(sys.maxsize, sys.maxsize, sys.maxsize)

    def open_connection(self) -> bool:
        """Count a new WebSocket if there is room; False (and counted as refused) if not."""
        if self.connections >= self.max_connections:
            self.refused_connections += 1
            return False
        self.connections += 1
        return True

    def close_connection(self) -> None:
        """A WebSocket admitted by ``open_connection`` ended."""
        self.connections -= 1

    def open_session(self) -> bool:
        """Count a session that starts work if there is room; False (counted as refused) if not."""
        if self.sessions >= self.max_sessions:
            self.refused_sessions += 1
            return False
        self.sessions += 1
        return True

    @property
    def sessions_full(self) -> str:
        """Why work is refused while ``max_sessions`` have work."""
        return f"{self.max_sessions} sessions are synthesizing; try again later"

    def close_session(self) -> None:
        """A session admitted by ``open_session`` has no more work."""
        self.sessions -= 1

    def queue_segment(self, segment_id: str) -> None:
        """Count one more queued segment, or raise ``busy`` for it when the queues are full."""
        if self.queued >= self.max_queued:
            self.refused_segments += 1
            raise ProtocolError(
                ErrorCode.BUSY,
                f"the server has {self.queued} segments queued; try again later",
                segment_id,
            )
        self.queued += 1

    def leave_queue(self, count: int = 1) -> None:
        """``count`` queued segments were dropped without synthesis (cancelled, peer gone)."""
        self.queued -= count

    def start_segment(self) -> None:
        """A queued segment went to synthesis."""
        self.queued -= 1
        self.in_flight += 1

    def end_segment(self) -> None:
        """A segment's synthesis ended (done, failed or cancelled)."""
        self.in_flight -= 1

    def snapshot(self) -> dict[str, int]:
        """The limits and counts, for ``/ping`` and metrics."""
        return asdict(self)
