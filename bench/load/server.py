"""A fresh ``tts-server`` child process for the load benchmark, one per server mode.

Unlike ``agent.local_tts`` it never reuses a running server: each mode (``--max-batch 1``, the
batched setting) gets its own process on a free port, and it is stopped before the next starts.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence

import httpx

from tts_protocol import PING_PATH, STREAM_PATH

READY_LIMIT_S = 300.0  # loading a full-size checkpoint and warming up on a busy CPU


class ServerFailed(RuntimeError):
    """The server child exited or never answered ``/ping`` with 200."""


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_flags(python: str = sys.executable) -> str:
    """The server's ``--help`` text, to see which flags this checkout's server has."""
    command = [python, "-m", "tts_server", "--help"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def ping_url(ws_url: str) -> str:
    """The ``/ping`` URL of the server behind a WebSocket URL."""
    scheme, rest = ws_url.split("://", 1)
    host = rest.split("/", 1)[0]
    return f"{'https' if scheme == 'wss' else 'http'}://{host}{PING_PATH}"


@contextlib.contextmanager
def tts_server(args: Sequence[str], limit_s: float = READY_LIMIT_S) -> Iterator[str]:
    """``python -m tts_server ARGS`` on a free loopback port; yields its WebSocket URL."""
    port = free_port()
    command = [sys.executable, "-m", "tts_server", "--host", "127.0.0.1", "--port", str(port)]
    child = subprocess.Popen([*command, "--log-level", "warning", *args])
    url = f"ws://127.0.0.1:{port}{STREAM_PATH}"
    try:
        deadline = time.monotonic() + limit_s
        while not _healthy(ping_url(url), args):
            if child.poll() is not None:
                raise ServerFailed(f"tts-server {' '.join(args)} exited with {child.returncode}")
            if time.monotonic() > deadline:
                raise ServerFailed(f"tts-server {' '.join(args)} not healthy in {limit_s} s")
            time.sleep(0.2)
        yield url
    finally:
        child.terminate()
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _healthy(url: str, args: Sequence[str]) -> bool:
    """True once ``/ping`` answers 200; a server whose engine failed to load is given up on."""
    try:
        response = httpx.get(url, timeout=2)
    except httpx.HTTPError:
        return False
    if response.status_code != 200 and response.json().get("status") == "Failed":
        reason = response.json().get("reason")
        raise ServerFailed(f"tts-server {' '.join(args)} failed to load: {reason}")
    return response.status_code == 200
