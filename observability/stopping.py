"""Stopping a long-running command on Ctrl+C (SIGINT) or SIGTERM: one line, every child
process ended, the conventional status (docs/operations.md, "Stopping").

``catch_stops`` makes both signals raise ``Stopped`` in the main thread, so every ``with`` and
``finally`` on the way up runs: child processes are terminated and waited for, servers in
threads are stopped. uvicorn handles both signals itself while it serves (its graceful
shutdown, and the TTS server's drain before it) and raises the signal again once done, which
lands here too. ``Stopped`` is a ``KeyboardInterrupt``, so asyncio and the libraries treat it
as they treat Ctrl+C: a task does not swallow it. ``end_stopped`` prints the command's one line
on stderr and ends the process by the signal itself, as uvicorn and Python do: a shell's ``$?``
is 130 after SIGINT and 143 after SIGTERM (``subprocess`` reads -2 and -15), and a shell
script that ran the command stops too.
One stop at a time: the first signal begins the process's stop (``begin``); a second one (a user
pressing Ctrl+C twice, or a terminal's SIGINT reaching the process twice) raises nothing more
on the way up, where it would cut a ``finally`` short or print a traceback before the line: it
hurries the stop under way instead (``hurried``: the waits for a child's or a server's drain
are cut short), and the line and the status stay the first signal's.
``read_lines`` reads a command's stdin in a thread that a stop does not wait for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import NoReturn, TextIO

SIGNALS = (signal.SIGINT, signal.SIGTERM)
SAID = {signal.SIGINT: "Ctrl+C (SIGINT)", signal.SIGTERM: "SIGTERM"}
STARTING = "it was still starting; nothing was lost"  # a stop's line before a command is up


class Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; ``ended`` says what was ended on the way up, ``cut`` whether
    it cut requests still running short."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.ended: list[str] = []
        self.cut = False

    @property
    def by(self) -> str:
        """The signal, as the user knows it: ``Ctrl+C (SIGINT)`` or ``SIGTERM``."""
        return SAID.get(signal.Signals(self.signum), signal.Signals(self.signum).name)


@dataclass
class UnderWay:
    """The process's stop, once a signal has begun it."""

    signum: int | None = None
    hurry: threading.Event = field(default_factory=threading.Event)


UNDER_WAY = UnderWay()


def begin(signum: int) -> bool:
    """True where ``signum`` begins the process's stop; False where one is under way already,
    which this signal hurries instead (``hurried``)."""
    if UNDER_WAY.signum is None:
        UNDER_WAY.signum = signum
        return True
    UNDER_WAY.hurry.set()
    return False


def as_stop(error: BaseException) -> Stopped | None:
    """``error`` as the stop it came from, or None where it is a failure of its own. A
    ``Stopped`` is itself. Any other error that rose while a stop was under way is that stop's
    doing, a new ``Stopped`` for its signal (``__cause__`` the error): the handler's raise can
    land inside a library's native code, which hands it on as an error of its own
    (pydantic-core building a schema while a module imports gives ``SchemaError``)."""
    if isinstance(error, Stopped):
        return error
    if UNDER_WAY.signum is None:
        return None
    stopped = Stopped(UNDER_WAY.signum)
    stopped.__cause__ = error
    return stopped


def hurried() -> bool:
    """Whether a second signal asked the stop under way to stop now (its waits cut short)."""
    return UNDER_WAY.hurry.is_set()


def _raise_stopped(signum: int, _frame: FrameType | None) -> None:
    """Raise ``Stopped`` where the program is (only for the signal that begins the stop);
    where that is an event loop between tasks (waiting on its sockets), from a callback of the
    loop's, which leaves the loop and has its tasks cancelled, rather than in whichever task
    would run next."""
    if not begin(signum):
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise Stopped(signum) from None
    if asyncio.current_task(loop) is not None:  # in a task's step (uvicorn's own raise too)
        raise Stopped(signum)
    loop.call_soon_threadsafe(_stop, signum)


def _stop(signum: int) -> None:
    raise Stopped(signum)


class StopNoise(logging.Filter):
    """Drops asyncio's report of a task that ended by a stop alone: anyio's task groups (httpx's
    and httpcore's) wrap a ``Stopped`` raised in a child task in a ``BaseExceptionGroup``, which
    ``asyncio.run`` reports as unhandled while it shuts down, before the stop's own line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, BaseExceptionGroup) and error.split(Stopped)[1] is None)


STOP_NOISE = StopNoise()
ASYNCIO_LOG = logging.getLogger("asyncio")


def catch_stops() -> None:
    """From now on SIGINT and SIGTERM raise ``Stopped`` in the main thread (a no-op off it),
    and asyncio keeps quiet about a task that a stop ended (``StopNoise``)."""
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, _raise_stopped)
        ASYNCIO_LOG.addFilter(STOP_NOISE)


@contextlib.contextmanager
def stops_caught() -> Iterator[None]:
    """``catch_stops`` within, the handlers before it restored after and no stop under way (a
    command run in a process that goes on, as a test's)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {signum: signal.getsignal(signum) for signum in SIGNALS}
    quiet_before = STOP_NOISE in ASYNCIO_LOG.filters
    catch_stops()
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        if not quiet_before:
            ASYNCIO_LOG.removeFilter(STOP_NOISE)
        UNDER_WAY.signum = None
        UNDER_WAY.hurry.clear()


async def read_lines(stream: TextIO) -> AsyncIterator[str]:
    """The lines of ``stream`` (newline dropped), read in a daemon thread of their own: the loop
    keeps serving its sockets meanwhile, and a stop (Ctrl+C, SIGTERM) does not wait for a line
    that may never come, as ``asyncio.run``'s close would wait for a thread of its executor
    (``asyncio.to_thread``)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str] = asyncio.Queue()

    def read() -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: no one reads on
            for line in iter(stream.readline, ""):
                loop.call_soon_threadsafe(queue.put_nowait, line)
            loop.call_soon_threadsafe(queue.put_nowait, "")  # the stream's end

    threading.Thread(target=read, name="stdin lines", daemon=True).start()
    while line := await queue.get():
        yield line.rstrip("\n")


def stop_line(command: str, stopped: Stopped, kept: str) -> str:
    """``<command>: stopped by <signal>; <what ended>; <kept>``."""
    ended = f"; {', '.join(stopped.ended)} ended" if stopped.ended else ""
    return f"{command}: stopped by {stopped.by}{ended}; {kept}"


def end_stopped(line: str, signum: int) -> NoReturn:
    """Print ``line`` on stderr (if any) and end the process by ``signum`` (status 128 +
    ``signum`` where the signal cannot kill it, as for PID 1 in a container)."""
    for signum_ in SIGNALS:  # a second signal now must not cut the line short
        signal.signal(signum_, signal.SIG_IGN)
    if line:
        print(line, file=sys.stderr, flush=True)
    logging.shutdown()
    sys.stdout.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    raise SystemExit(128 + signum)
