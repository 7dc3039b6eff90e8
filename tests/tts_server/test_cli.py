"""``tts-server``'s start: its banner (off for a parent that prints its own) and its access
log, which leaves out the readiness poll only."""

from __future__ import annotations

import logging

from tts_protocol import READINESS_POLL
from tts_server.cli import QuietReadinessPoll, banner
from tts_server.settings import parse_settings


def access_line(path: str, status: int) -> logging.LogRecord:
    """A record as uvicorn's access logger makes it."""
    args = ("127.0.0.1:50000", "GET", path, "1.1", status)
    return logging.LogRecord(
        "uvicorn.access", logging.INFO, "", 0, '%s - "%s %s HTTP/%s" %d', args, None
    )


def test_the_readiness_poll_is_left_out_of_the_access_log_and_nothing_else() -> None:
    quiet = QuietReadinessPoll()
    assert not quiet.filter(access_line(READINESS_POLL, 503))
    assert not quiet.filter(access_line(READINESS_POLL, 200))
    assert quiet.filter(access_line("/ping", 503))  # anyone else's ping is traffic
    assert quiet.filter(access_line("/invocations", 200))
    assert quiet.filter(
        logging.LogRecord("uvicorn.error", logging.INFO, "", 0, "started", None, None)
    )


def test_the_banner_can_be_turned_off_by_flag_or_variable() -> None:
    assert parse_settings([]).banner
    assert not parse_settings(["--no-banner"]).banner
    assert not parse_settings([], {"TTS_BANNER": "0"}).banner
    assert banner(parse_settings(["--port", "8123"])).startswith(
        "tts-server: onnx engine on http://127.0.0.1:8123\n"
    )
