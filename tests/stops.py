"""A long-running command as a child process, stopped by a signal as a user would stop it.

``Command`` starts one in a session of its own (as a terminal's job is a process group of its
own), waits until a URL answers, sends SIGINT or SIGTERM to the process (or, as a terminal's
Ctrl+C does, to its whole group) and hands back its status and output. ``shell_status`` is the
status a shell shows (``$?``: 128 + the signal for a process the signal ended); ``stop_twice``
sends a second signal a moment after the first (a user pressing Ctrl+C twice). ``Silent`` is a
command whose stdin is a user who types nothing; ``only_line`` the one line a stop said;
``listens`` whether a port is still held (``wait_listening``: until the command holds one);
``slow_uvicorn`` holds a command in its imports.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Ended:
    """How a stopped command ended."""

    status: int  # Popen's returncode: -N where signal N ended it
    out: str
    err: str

    @property
    def shell_status(self) -> int:
        """``$?`` in a shell: 128 + N where signal N ended the process."""
        return 128 - self.status if self.status < 0 else self.status


class Command:
    """``argv`` running in its own session under ``ROOT``, its output captured."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.argv = argv
        self.child = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def wait_for(self, url: str, limit_s: float = 120.0) -> None:
        """Until ``url`` answers 200; fails (with the output) if the command ends first."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            if self.child.poll() is not None:
                out, err = self.child.communicate()
                raise AssertionError(f"{self.argv} ended ({self.child.returncode}):\n{out}{err}")
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.child.kill()
        raise AssertionError(f"{url} did not answer within {limit_s} s")

    def wait_listening(self, limit_s: float = 120.0) -> None:
        """Until the command itself listens on a TCP port (a server in a thread of its own up,
        whose port it chose); fails (with the output) if the command ends first."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            if self.child.poll() is not None:
                out, err = self.child.communicate()
                raise AssertionError(f"{self.argv} ended ({self.child.returncode}):\n{out}{err}")
            if listening_sockets(self.child.pid):
                return
            time.sleep(0.1)
        self.child.kill()
        raise AssertionError(f"{self.argv} listened on no port within {limit_s} s")

    def children(self) -> list[int]:
        """The command's own child processes now (Linux ``/proc``)."""
        pid = self.child.pid
        tasks = Path(f"/proc/{pid}/task")
        return [int(c) for t in tasks.iterdir() for c in (t / "children").read_text().split()]

    def stop(self, signum: int, *, group: bool = False, limit_s: float = 60.0) -> Ended:
        """Send ``signum`` (to the whole process group if ``group``: a terminal's Ctrl+C) and
        wait for the end."""
        if group:
            os.killpg(self.child.pid, signum)
        else:
            self.child.send_signal(signum)
        try:
            out, err = self.child.communicate(timeout=limit_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.child.pid, signal.SIGKILL)
            raise
        return Ended(self.child.returncode, out, err)

    def stop_twice(
        self, first: int, second: int, *, gap_s: float = 0.1, group: bool = False
    ) -> Ended:
        """``first``, then ``second`` ``gap_s`` later (to the whole group if ``group``), and
        wait for the end."""
        if group:
            os.killpg(self.child.pid, first)
        else:
            self.child.send_signal(first)
        time.sleep(gap_s)
        return self.stop(second, group=group)

    def kill(self) -> None:
        """End it (and its group) if it still runs."""
        if self.child.poll() is None:
            os.killpg(self.child.pid, signal.SIGKILL)
            self.child.communicate()


LISTEN = "0A"  # a TCP socket's state in /proc/net/tcp


def listening_sockets(pid: int) -> set[str]:
    """The inodes of the TCP sockets process ``pid`` holds open in the listening state."""
    held = set()
    with contextlib.suppress(FileNotFoundError, PermissionError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    held.add(target[len("socket:[") : -1])
    listening = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = row.split()
                if fields[3] == LISTEN:
                    listening.add(fields[9])
    return held & listening


def gone(pid: int) -> bool:
    """True once no process has ``pid`` (ended and reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


class Silent(Command):
    """``Command`` whose stdin is a pipe kept open and never written: a user who types nothing
    (the test's end of the pipe closes with ``kill``)."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.argv = argv
        read, self.typing = os.pipe()
        self.child = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdin=read,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        os.close(read)

    def kill(self) -> None:
        super().kill()
        os.close(self.typing)


NOISE = ("Traceback", "CancelledError", "KeyboardInterrupt")


def only_line(ended: Ended) -> str:
    """The one line a stopped command said on stderr (and no traceback on stdout either), else
    fail showing all of it."""
    lines = ended.err.splitlines()
    said = ended.err + ended.out
    assert len(lines) == 1 and not any(word in said for word in NOISE), said
    return lines[0]


def listens(port: int) -> bool:
    """Whether something still accepts connections on loopback ``port``."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def slow_uvicorn(directory: Path) -> tuple[dict[str, str], Path]:
    """A uvicorn in ``directory`` that takes a minute to import: the environment that puts it
    first on a command's path, and the file it creates once the import has begun."""
    package = directory / "uvicorn"
    package.mkdir()
    mark = directory / "importing"
    package.joinpath("__init__.py").write_text(
        f"import pathlib, time\npathlib.Path({str(mark)!r}).touch()\ntime.sleep(60)\n"
    )
    return {"PYTHONPATH": str(directory)}, mark
