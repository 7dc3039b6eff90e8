"""``python -m tts_client`` against the real server; stopped by Ctrl+C or SIGTERM as a real
process (``tests.stops``) waiting on loopback: for a line on stdin, for a handshake, for audio;
and stopped while it writes the WAV, which is whole or not at all.
"""

from __future__ import annotations

import contextlib
import io
import signal
import socket
import sys
import threading
import time
import wave
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve

from observability.stopping import Stopped
from tests.stops import Command, Ended, Silent, only_line
from tts_client.cli import main, write_whole
from tts_protocol import SAMPLE_RATE, Close, Ready, encode
from tts_server.testing.server_thread import ServerThread

CLIENT = [sys.executable, "-m", "tts_client"]
WAIT_S = 30.0  # how long the client may take to reach its wait (imports on a loaded box)
SAID = {signal.SIGINT: "Ctrl+C (SIGINT)", signal.SIGTERM: "SIGTERM"}


def test_cli_speaks_text_and_writes_a_wav(
    tts_server: ServerThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.wav"
    assert main(["--url", tts_server.ws_url, "--output", str(out), "Hello there."]) == 0
    with wave.open(str(out)) as wav:
        assert wav.getframerate() == SAMPLE_RATE and wav.getnframes() > SAMPLE_RATE // 4
    printed = capsys.readouterr().out
    assert "[1] first audio" in printed and "total" in printed


def test_cli_speaks_each_stdin_line(
    tts_server: ServerThread,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("One.\n\nTwo.\n"))
    out = tmp_path / "lines.wav"
    assert main(["--url", tts_server.ws_url, "--speed", "1.2", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "[1] first audio" in printed and "[2] first audio" in printed
    assert "[3]" not in printed


def test_cli_reports_an_unreachable_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "ws://127.0.0.1:9/ws"  # the discard port: nothing listens
    assert main(["--url", url, "--output", str(tmp_path / "x.wav"), "Hi."]) == 1
    assert "error:" in capsys.readouterr().err


class Mute:
    """A TTS endpoint on loopback that sends ``ready`` and then never answers: what it was
    sent, and whether the client has closed its connection."""

    def __init__(self) -> None:
        self.frames: list[str | bytes] = []
        self.closed = threading.Event()
        self.server = serve(self.session, "127.0.0.1", 0)
        self.url = f"ws://127.0.0.1:{self.server.socket.getsockname()[1]}/ws"

    def session(self, connection: ServerConnection) -> None:
        """``ready``, then nothing until the client goes."""
        connection.send(encode(Ready(voices=("v",), default_voice="v")))
        with contextlib.suppress(ConnectionClosed):
            for frame in connection:
                self.frames.append(frame)
        self.closed.set()

    def wait_for(self, what: str, met: Callable[[], object]) -> None:
        """Until ``met()`` holds, else fail naming ``what``."""
        deadline = time.monotonic() + WAIT_S
        while not met():
            assert time.monotonic() < deadline, f"the client never {what}"
            time.sleep(0.02)


@pytest.fixture
def mute() -> Iterator[Mute]:
    """A ``Mute`` endpoint, serving in a thread."""
    endpoint = Mute()
    with endpoint.server:
        threading.Thread(target=endpoint.server.serve_forever, daemon=True).start()
        yield endpoint
        endpoint.server.shutdown()


def assert_stopped(ended: Ended, signum: int, output: Path) -> None:
    """The end by ``signum`` (130 or 143), one line, no WAV."""
    assert ended.shell_status == 128 + signum and ended.status == -signum
    assert only_line(ended) == (
        f"python -m tts_client: stopped by {SAID[signum]}; "
        f"no WAV was written, so nothing was lost: {output} is as it was"
    )
    assert not output.exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_while_it_waits_for_a_line_on_stdin_does_not_wait_for_the_line(
    mute: Mute, tmp_path: Path, signum: int
) -> None:
    """stdin is read in a thread that a stop does not wait for; the connection is closed."""
    output = tmp_path / "out.wav"
    client = Silent([*CLIENT, "--url", mute.url, "--output", str(output)])
    try:
        mute.wait_for("connected", lambda: mute.server.connections)
        time.sleep(0.5)  # past the ready frame, reading stdin (a stop before is one line too)
        ended = client.stop(signum, limit_s=10)
    finally:
        client.kill()
    assert_stopped(ended, signum, output)
    assert mute.frames == [encode(Close())]  # no line, no speech: the session closed as due
    assert mute.closed.wait(5), "the connection to the endpoint was left open"


def test_a_stop_while_it_waits_for_audio_closes_the_session(mute: Mute, tmp_path: Path) -> None:
    output = tmp_path / "out.wav"
    client = Command([*CLIENT, "--url", mute.url, "--output", str(output), "Hello there."])
    try:
        mute.wait_for("sent its segment", lambda: mute.frames)
        ended = client.stop(signal.SIGINT, limit_s=10)
    finally:
        client.kill()
    assert_stopped(ended, signal.SIGINT, output)
    assert mute.closed.wait(5), "the connection to the endpoint was left open"


def test_a_stop_while_it_waits_for_the_handshake(tmp_path: Path) -> None:
    """An endpoint that accepts the connection and never answers."""
    output = tmp_path / "out.wav"
    with socket.create_server(("127.0.0.1", 0)) as silent:
        silent.settimeout(WAIT_S)
        url = f"ws://127.0.0.1:{silent.getsockname()[1]}/ws"
        client = Command([*CLIENT, "--url", url, "--output", str(output), "Hello there."])
        try:
            connection, _address = silent.accept()
            with connection:
                ended = client.stop(signal.SIGTERM, limit_s=10)
        finally:
            client.kill()
    assert_stopped(ended, signal.SIGTERM, output)


@pytest.mark.parametrize("before", [None, b"the WAV of an earlier run"])
def test_a_stop_while_the_wav_is_written_leaves_the_file_as_it_was_and_no_part(
    before: bytes | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped with the bytes written but not yet on disk for sure: nothing at the output but
    what was there, and no partial file beside it."""
    output = tmp_path / "out.wav"
    if before is not None:
        output.write_bytes(before)

    def stopped(_fd: int) -> None:
        raise Stopped(signal.SIGTERM)

    monkeypatch.setattr("tts_client.cli.os.fsync", stopped)
    with pytest.raises(Stopped):
        write_whole(output, b"RIFF" + bytes(4096))
    assert list(tmp_path.iterdir()) == ([] if before is None else [output])
    assert before is None or output.read_bytes() == before


def test_a_whole_wav_replaces_the_last_and_leaves_nothing_else(tmp_path: Path) -> None:
    output = tmp_path / "out.wav"
    output.write_bytes(b"the WAV of an earlier run")
    write_whole(output, b"RIFF" + bytes(4096))
    assert list(tmp_path.iterdir()) == [output]
    assert output.read_bytes() == b"RIFF" + bytes(4096)
