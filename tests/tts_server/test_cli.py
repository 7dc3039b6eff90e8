"""``tts-server``'s start: its banner (off for a parent that prints its own) and its access
log, which leaves out the readiness poll only; its stop: one line (none without the banner),
the end by the signal."""

from __future__ import annotations

import logging
import signal
import sys

import pytest

from tests.fake_server import free_port
from tests.stops import Command
from tts_protocol import PING_PATH, READINESS_POLL
from tts_server.cli import QuietReadinessPoll, banner, drained
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


# --- stopping: one line, the drain's outcome, the end by the signal ---------------------------

FAKE = [sys.executable, "-m", "tests.fake_server", "--log-level", "warning"]


@pytest.mark.parametrize(
    ("signum", "said", "shell"),
    [(signal.SIGINT, "Ctrl+C (SIGINT)", 130), (signal.SIGTERM, "SIGTERM", 143)],
)
def test_a_stopped_server_drains_and_says_one_line(signum: int, said: str, shell: int) -> None:
    """The real CLI's serve (a fake engine, for speed): the drain, then one line."""
    port = free_port()
    server = Command([*FAKE, "--port", str(port)])
    try:
        server.wait_for(f"http://127.0.0.1:{port}{PING_PATH}")
        ended = server.stop(signum)
    finally:
        server.kill()
    assert ended.shell_status == shell and ended.status == -signum
    assert ended.err == (
        f"tts-server: stopped by {said}; every open session finished its queued speech first; "
        "nothing was lost\n"
    )


def test_without_its_banner_it_leaves_the_stop_line_to_its_parent() -> None:
    port = free_port()
    server = Command([*FAKE, "--port", str(port), "--no-banner"])
    try:
        server.wait_for(f"http://127.0.0.1:{port}{PING_PATH}")
        ended = server.stop(signal.SIGTERM)
    finally:
        server.kill()
    assert (ended.status, ended.out, ended.err) == (-signal.SIGTERM, "", "")


def test_the_stop_line_says_when_the_drain_was_cut_short() -> None:
    settings = parse_settings([])
    assert drained(False, settings) == (
        "the drain was cut short (a second signal, or its 20 s): sessions still speaking were "
        "closed with 1012, and their clients may retry"
    )
    assert drained(None, settings) == "it had not started serving; nothing was lost"
