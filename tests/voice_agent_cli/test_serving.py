"""Stopping ``voice-agent`` and ``make run``: one line, every child ended, the shell's 130 or
143; and a dev server whose own start-up fails: one line and exit status 3.

The processes are real (``voice-agent dev`` with its real TTS child, ``make run``, ``voice-agent
bench``), on loopback ports of their own; a fast TTS server (``tests.fake_server``: the real
CLI and uvicorn, a fake engine) stands in for speech where the test is not about the child.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette

from agent.doors import devserver
from tests.fake_server import ServerProcess, free_port
from tests.stops import Command, gone
from voice_agent_cli import cli, serving
from voice_agent_cli.local_tts import bind

VOICE_AGENT = [sys.executable, "-m", "voice_agent_cli"]
KEPT = "nothing was lost: the agent keeps nothing on disk"


@pytest.fixture(scope="module")
def speech() -> Iterator[ServerProcess]:
    """One fast TTS server for the module's dev servers that start no child of their own."""
    server = ServerProcess().start()
    yield server
    server.kill()


@pytest.fixture
def quiet_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    """``dev`` sets up the process's logging and tracing; not in the test process."""
    monkeypatch.setattr(cli.logs, "configure", lambda *_args: None)
    monkeypatch.setattr(cli.tracing, "configure", lambda *_args: None)


def failing_app(*_args: object, **_kwargs: object) -> Starlette:
    """An app whose start-up fails, as a dev server's would if its lifespan raised."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        raise RuntimeError("the listening models are missing")
        yield

    return Starlette(lifespan=lifespan)


def test_a_server_whose_start_up_fails_raises_server_failed_with_uvicorns_reason() -> None:
    listening = bind("127.0.0.1", 0, "--port")
    port = listening.getsockname()[1]
    with pytest.raises(serving.ServerFailed) as failed:
        serving.serve_dev(failing_app(), listening, "127.0.0.1")
    assert str(failed.value) == (
        f"the dev server on 127.0.0.1:{port} did not start: "
        "RuntimeError: the listening models are missing"
    )


def test_dev_whose_server_fails_to_start_is_one_line_and_exit_3(
    quiet_setup: None,
    speech: ServerProcess,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(devserver, "create_app", failing_app)
    port = free_port()
    with pytest.raises(SystemExit) as exited:
        cli.main(["dev", "--port", str(port), "--tts-url", speech.ws_url])
    assert exited.value.code == 3
    assert capsys.readouterr().err == (
        f"voice-agent dev: the dev server on 127.0.0.1:{port} did not start: "
        "RuntimeError: the listening models are missing\n"
    )


def test_a_setting_it_refuses_is_one_line_and_exit_2(
    quiet_setup: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VOICE_AGENT_LISTEN_MAX_S", "inf")
    with pytest.raises(SystemExit) as exited:
        cli.main(["dev", "--port", str(free_port()), "--tts-url", "ws://127.0.0.1:9/ws"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "voice-agent dev: VOICE_AGENT_LISTEN_MAX_S must be a finite positive number, not 'inf'\n"
    )


def only_line(text: str) -> str:
    """The one line of ``text`` (a command's stderr at its stop), else fail showing it all."""
    lines = text.splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def test_dev_with_its_tts_child_stopped_by_ctrl_c_ends_the_child_and_says_one_line() -> None:
    port, tts_port = free_port(), free_port()
    dev = Command([*VOICE_AGENT, "dev", "--port", str(port), "--tts-port", str(tts_port)])
    try:
        dev.wait_for(f"http://127.0.0.1:{port}/ping", limit_s=240)
        (child,) = dev.children()
        ended = dev.stop(signal.SIGINT, group=True)  # a terminal's Ctrl+C: the whole group
    finally:
        dev.kill()
    assert ended.shell_status == 130 and ended.status == -signal.SIGINT
    assert only_line(ended.err) == (
        f"voice-agent dev: stopped by Ctrl+C (SIGINT); the dev server on 127.0.0.1:{port}, "
        f"the TTS server on 127.0.0.1:{tts_port} ended; {KEPT}"
    )
    assert gone(child)


def test_dev_stopped_by_sigterm_ends_with_143_and_one_line_not_3(speech: ServerProcess) -> None:
    """A server that started and shut down cleanly is no failure to start (status 3)."""
    port = free_port()
    dev = Command([*VOICE_AGENT, "dev", "--port", str(port), "--tts-url", speech.ws_url])
    try:
        dev.wait_for(f"http://127.0.0.1:{port}/ping")
        ended = dev.stop(signal.SIGTERM)
    finally:
        dev.kill()
    assert ended.shell_status == 143 and ended.status == -signal.SIGTERM
    assert only_line(ended.err) == (
        f"voice-agent dev: stopped by SIGTERM; the dev server on 127.0.0.1:{port} ended; {KEPT}"
    )
    assert "voice chat:" in ended.out


def test_make_run_stopped_by_ctrl_c_says_one_line_and_make_adds_none(
    speech: ServerProcess,
) -> None:
    """make prints no error line of its own, and ends by the terminal's Ctrl+C as well."""
    port = free_port()
    flags = f"ARGS=--port {port} --tts-url {speech.ws_url}"
    make = Command(["make", "--no-print-directory", "run", flags])
    try:
        make.wait_for(f"http://127.0.0.1:{port}/ping")
        ended = make.stop(signal.SIGINT, group=True)
    finally:
        make.kill()
    assert ended.shell_status == 130
    assert only_line(ended.err) == (
        f"voice-agent dev: stopped by Ctrl+C (SIGINT); the dev server on 127.0.0.1:{port} "
        f"ended; {KEPT}"
    )


def test_bench_stopped_mid_run_writes_no_report_and_says_so(
    speech: ServerProcess, tmp_path: Path
) -> None:
    bench = [*VOICE_AGENT, "bench", "--quick", "--tts-url", speech.ws_url, "--out", str(tmp_path)]
    command = Command(bench)
    try:
        command.wait_listening()  # its dev server up, measuring (a stop before is one line too)
        time.sleep(1)
        ended = command.stop(signal.SIGINT, group=True, limit_s=90)
    finally:
        command.kill()
    assert ended.shell_status == 130
    said = [line for line in ended.err.splitlines() if not line.startswith("bench: load average")]
    assert said == [
        "voice-agent bench: stopped by Ctrl+C (SIGINT); "
        "no report was written: docs/benchmarks/ keep the last one"
    ], ended.err
    assert list(tmp_path.iterdir()) == []
