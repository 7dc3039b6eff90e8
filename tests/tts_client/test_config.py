"""``SessionConfig``: the reconnect backoff doubles, is capped and is jittered downwards."""

from __future__ import annotations

from tts_client import SessionConfig


def test_backoff_doubles_up_to_the_cap_with_jitter() -> None:
    config = SessionConfig(backoff_initial=0.1, backoff_max=1.0)
    for attempt, full in enumerate([0.1, 0.2, 0.4, 0.8, 1.0, 1.0]):
        delays = [config.backoff(attempt) for _ in range(50)]
        assert all(full * 0.5 <= d <= full for d in delays)
        assert len(set(delays)) > 1  # jittered, so that clients do not reconnect in step
