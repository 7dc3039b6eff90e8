"""``RetryNotice``: a session's outage is logged when it starts, and told if it lasts.

The first failure of an outage (a busy server, a lost connection) is logged at WARNING with the
server's reason; the retries after it are the session's business. If the outage still runs
after ``delay`` seconds, ``tell`` is called once, so that a borrower can say so to its user;
progress before then cancels the notice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tts_client.errors import TTSError

log = logging.getLogger("tts_client")


class RetryNotice:
    """The outage notice of one session: a log line now, ``tell(error)`` after ``delay``."""

    def __init__(self, endpoint: str, delay: float, tell: Callable[[TTSError], None]) -> None:
        self._endpoint = endpoint
        self._delay = delay
        self._tell = tell
        self._timer: asyncio.TimerHandle | None = None
        self._reconnect_told = False  # the running outage of the connection was reported

    def started(self, error: TTSError, doing: str = "retrying") -> None:
        """The first failure of an outage: log it, and arm the notice unless one is armed."""
        log.warning("%s: %s; %s", self._endpoint, error, doing)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._delay, self._fire, error)

    def reconnecting(self, error: TTSError, audio_owed: bool) -> None:
        """A failed (re)connect: the first of an outage that owes audio starts the notice; the
        others, and those while nothing is owed (no one is waiting), are logged at INFO."""
        if audio_owed and not self._reconnect_told:
            self._reconnect_told = True
            self.started(error, "reconnecting")
        else:
            log.info("%s: %s; reconnecting", self._endpoint, error)

    def cancel(self) -> None:
        """Connected again, or given up: a notice not yet given is not given."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def progressed(self) -> None:
        """The session works again: the next failure starts a new outage."""
        self._reconnect_told = False
        self.cancel()

    def _fire(self, error: TTSError) -> None:
        self._timer = None
        self._tell(error)
