"""The real ``tts-server`` process (CLI, uvicorn, signals, drain) with a paced fake engine.

``python -m tests.fake_server --infer-s 0.2 [tts-server flags]`` serves exactly as
``tts-server`` does (``tts_server.cli.serve``), except that the engine is ``FakeEngine`` and
each piece (one sentence) takes ``--infer-s`` seconds on the engine thread, so that a test can
have segments queued and in synthesis when it sends a signal. ``ServerProcess`` runs it.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

from tts_protocol import PING_PATH, STREAM_PATH
from tts_server.app import create_app
from tts_server.cli import serve
from tts_server.engines.scheduler import Piece
from tts_server.settings import parse_settings
from tts_server.testing.fake_engine import FakeEngine

ROOT = Path(__file__).resolve().parent.parent


class PacedFakeEngine(FakeEngine):
    """``FakeEngine`` whose every inference takes ``infer_s`` seconds (outside the warm-up)."""

    def __init__(self, infer_s: float) -> None:
        super().__init__()
        self._infer_s = infer_s

    def tone(self, piece: Piece) -> np.ndarray:
        if self.calls:  # the first call is the warm-up: no wait before the server is healthy
            time.sleep(self._infer_s)
        return super().tone(piece)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """``python -m tests.fake_server`` on a port of its own; ``start`` waits until Healthy."""

    def __init__(self, *flags: str, infer_s: float = 0.0, port: int | None = None) -> None:
        self.port = port or free_port()
        self._command = [sys.executable, "-m", "tests.fake_server", "--infer-s", str(infer_s)]
        self._command += ["--port", str(self.port), "--log-level", "warning", *flags]
        self._child: subprocess.Popen[bytes] | None = None

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}{STREAM_PATH}"

    @property
    def pid(self) -> int:
        assert self._child is not None
        return self._child.pid

    def start(self, limit_s: float = 30.0) -> ServerProcess:
        self._child = subprocess.Popen(self._command, cwd=ROOT)
        deadline = time.monotonic() + limit_s
        while not self.healthy():
            if self._child.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"{self._command} did not become healthy")
            time.sleep(0.05)
        return self

    def healthy(self) -> bool:
        try:
            return httpx.get(self.http_url + PING_PATH, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def signal(self, sig: signal.Signals) -> None:
        os.kill(self.pid, sig)

    def wait(self, limit_s: float) -> int:
        """The exit status (``-SIGTERM`` after a drain: uvicorn re-raises the signal)."""
        assert self._child is not None
        return self._child.wait(timeout=limit_s)

    def kill(self) -> None:
        if self._child is not None and self._child.poll() is None:
            self._child.kill()
            self._child.wait(timeout=10)

    def rss_bytes(self) -> int:
        """Resident memory now, from ``/proc``."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--infer-s", type=float, default=0.0)
    args, rest = parser.parse_known_args()
    settings = parse_settings(rest)
    logging.basicConfig(level=settings.log_level.upper())
    engine = PacedFakeEngine(args.infer_s)
    serve(create_app(settings, loader=lambda _settings: engine), settings)


if __name__ == "__main__":
    main()
