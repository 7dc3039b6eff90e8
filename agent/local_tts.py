"""The local TTS server as a child process, for ``voice-agent dev`` and ``voice-agent bench``.

``local_tts`` reuses a healthy server on the port, else starts ``python -m tts_server`` there
and waits until its ``/ping`` proves a real synthesis. The child dies with its parent.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx

from tts_protocol import PING_PATH, STREAM_PATH

TTS_READY_LIMIT_S = 180.0
PR_SET_PDEATHSIG = 1  # prctl option, <linux/prctl.h>


class LocalTTSFailed(RuntimeError):
    """The local TTS server did not become healthy."""


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}{PING_PATH}", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the parent dies, however it dies (Linux).

    uvicorn re-raises SIGTERM after its shutdown, which kills the parent before any ``finally``
    could stop the child.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@contextlib.contextmanager
def local_tts(host: str, port: int, log_level: str | None = None) -> Iterator[str]:
    """A healthy TTS server at ``host:port``: reuse a running one, else start a child process."""
    http = f"http://{host}:{port}"
    ws = f"ws://{host}:{port}{STREAM_PATH}"
    if _healthy(http):
        yield ws
        return
    command = [sys.executable, "-m", "tts_server", "--host", host, "--port", str(port)]
    command += ["--log-level", log_level] if log_level else []
    child = subprocess.Popen(command, preexec_fn=_die_with_parent)
    try:
        deadline = time.monotonic() + TTS_READY_LIMIT_S
        while not _healthy(http):
            if child.poll() is not None or time.monotonic() > deadline:
                raise LocalTTSFailed(f"tts-server on {http} did not become healthy")
            time.sleep(0.2)
        yield ws
    finally:
        child.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=10)
