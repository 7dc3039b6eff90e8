"""``SessionConfig``: the reconnect backoff doubles, is capped and is jittered downwards."""

from __future__ import annotations

from tts_client import SessionConfig
from tts_client.config import Outage


def test_backoff_doubles_up_to_the_cap_with_jitter() -> None:
    config = SessionConfig(backoff_initial=0.1, backoff_max=1.0)
    for attempt, full in enumerate([0.1, 0.2, 0.4, 0.8, 1.0, 1.0]):
        delays = [config.backoff(attempt) for _ in range(50)]
        assert all(full * 0.5 <= d <= full for d in delays)
        assert len(set(delays)) > 1  # jittered, so that clients do not reconnect in step


def test_an_outage_expires_after_the_window_and_progress_ends_it() -> None:
    outage = Outage(SessionConfig(backoff_initial=1.0, backoff_max=4.0), window=10.0)
    assert not outage.expired(100.0)  # no failure yet: no outage runs
    assert outage.record_failure(100.0) is True  # the first failure starts the outage
    assert not outage.expired(100.0)
    delays = [outage.next_delay() for _ in range(4)]
    assert 0.5 <= delays[0] <= 1.0 and 2.0 <= delays[3] <= 4.0  # doubling, capped at 4
    assert outage.record_failure(105.0) is False  # a later failure does not restart it
    assert not outage.expired(109.9) and outage.expired(110.0)
    outage.progressed()
    assert (outage.since, outage.retries) == (None, 0)
    outage.record_failure(500.0)
    assert not outage.expired(500.0)  # a new outage starts with the next failure
