"""``python -m tts_client`` against the real server."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import pytest

from tts_client.cli import main
from tts_protocol import SAMPLE_RATE
from tts_server.testing.server_thread import ServerThread


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
