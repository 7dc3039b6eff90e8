"""``SessionConfig``: the timeouts, reconnect policy and flow control of a ``TTSSession``.

``Outage`` applies the policy: how long a session has gone without progress, and the backoff
before its next retry: a reconnect (within ``reconnect_window``), or a connection or segment the
server refused as ``busy`` (within ``busy_window``: a server at capacity is said so fast).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from tts_client.errors import TTSError


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """Timeouts, reconnect policy and flow control of a session."""

    connect_timeout: float = 15.0  # transport connect plus the server's `ready`
    reply_timeout: float = 15.0  # longest silence allowed while segments are outstanding
    reconnect_window: float = 30.0  # a lost connection: give up after this long without progress
    busy_window: float = 3.0  # refused as busy (connect or segment): give up after this long
    retry_notice_s: float = 1.0  # an outage still running after this long is told (on_retry)
    backoff_initial: float = 0.1
    backoff_max: float = 2.0
    max_in_flight: int = 16  # segments sent without a terminal reply; more wait client-side
    drain_timeout: float = 60.0  # aclose(drain=True) cancels what is left after this
    close_timeout: float = 2.0  # wait this long for the server to close after 'close'
    on_error: Callable[[TTSError], None] | None = None  # errors not tied to one segment

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before reconnect ``attempt`` (0, 1, ...): doubling, capped, jittered."""
        delay = min(self.backoff_max, self.backoff_initial * 2.0**attempt)
        return delay * random.uniform(0.5, 1.0)


@dataclass(slots=True)
class Outage:
    """Time without progress and the retries made in it, given up after ``window`` seconds."""

    config: SessionConfig
    window: float
    since: float | None = None  # loop time of the first failure since the last progress
    retries: int = 0  # retries since the last progress

    def record_failure(self, now: float) -> bool:
        """A failure at ``now``: it starts the outage if none runs (then True: the first)."""
        if self.since is None:
            self.since = now
            return True
        return False

    def expired(self, now: float) -> bool:
        """True once the running outage has lasted ``window`` at ``now``."""
        return self.since is not None and now - self.since >= self.window

    def next_delay(self) -> float:
        """Seconds to wait before the next retry (the backoff grows with each one)."""
        delay = self.config.backoff(self.retries)
        self.retries += 1
        return delay

    def progressed(self) -> None:
        """Something worked: the next failure starts a new outage."""
        self.since, self.retries = None, 0
