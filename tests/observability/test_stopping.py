"""``observability.stopping``: a stop raised where the program is, one line, the end by the
signal; handlers restored for a process that goes on."""

from __future__ import annotations

import signal
import sys
import textwrap

import pytest

from observability.stopping import Stopped, as_stop, hurried, stop_line, stops_caught
from tests.stops import Command

# A program busy in asyncio tasks (some asleep, one computing) when the signal comes, with a
# "child" to end on the way up; a thread answers on a port once it runs.
PROGRAM = textwrap.dedent(
    """
    import asyncio, http.server, sys, threading
    from observability.stopping import Stopped, catch_stops, end_stopped, stop_line

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    async def busy():  # computing, and yielding the GIL's share to the thread that answers
        while True:
            sum(range(20_000))
            await asyncio.sleep(0.001)

    async def main():
        await asyncio.gather(busy(), *(asyncio.sleep(60) for _ in range(3)))

    catch_stops()
    web = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Ok)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        try:
            asyncio.run(main())
        except Stopped as stopped:
            stopped.ended.append("the child")
            raise
    except Stopped as stopped:
        end_stopped(stop_line("prog", stopped, "nothing was lost"), stopped.signum)
    """
)


@pytest.mark.parametrize(
    ("signum", "said"), [(signal.SIGINT, "Ctrl+C (SIGINT)"), (signal.SIGTERM, "SIGTERM")]
)
def test_a_stop_leaves_asyncio_runs_the_way_up_and_ends_by_the_signal(
    signum: int, said: str
) -> None:
    from tests.fake_server import free_port

    port = free_port()
    program = Command([sys.executable, "-c", PROGRAM, str(port)])
    try:
        program.wait_for(f"http://127.0.0.1:{port}/")
        ended = program.stop(signum)
    finally:
        program.kill()
    assert ended.status == -signum and ended.shell_status == 128 + signum
    assert ended.err == f"prog: stopped by {said}; the child ended; nothing was lost\n"


def test_the_line_names_the_signal_what_ended_and_what_was_kept() -> None:
    stopped = Stopped(signal.SIGTERM)
    assert stop_line("cmd", stopped, "kept") == "cmd: stopped by SIGTERM; kept"
    stopped.ended += ["the server on 127.0.0.1:1", "its child"]
    assert stop_line("cmd", stopped, "kept") == (
        "cmd: stopped by SIGTERM; the server on 127.0.0.1:1, its child ended; kept"
    )
    assert isinstance(stopped, KeyboardInterrupt)  # asyncio and libraries pass it up


def test_handlers_are_restored_once_the_command_returns() -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with stops_caught():
        assert signal.getsignal(signal.SIGTERM) is not before[0]
        with pytest.raises(Stopped) as stopped:
            signal.raise_signal(signal.SIGTERM)
        assert stopped.value.signum == signal.SIGTERM
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_a_second_signal_during_a_stop_raises_nothing_and_hurries_it() -> None:
    with stops_caught():
        with pytest.raises(Stopped) as stopped:
            signal.raise_signal(signal.SIGTERM)
        assert not hurried()
        signal.raise_signal(signal.SIGINT)  # on the way up: nothing more is raised
        assert hurried() and stopped.value.signum == signal.SIGTERM
    with stops_caught(), pytest.raises(Stopped):  # a command run after it stops anew
        assert not hurried()
        signal.raise_signal(signal.SIGINT)


def test_an_error_that_a_stop_caused_is_that_stop() -> None:
    def library_call() -> None:  # native code handing the handler's raise on as its own error
        try:
            signal.raise_signal(signal.SIGTERM)
        except Stopped as stop:
            raise ValueError(f"building a schema failed: {stop!r}") from None

    assert as_stop(ValueError("no stop under way")) is None
    with stops_caught():
        with pytest.raises(ValueError) as raised:
            library_call()
        stopped = as_stop(raised.value)
        assert stopped is not None and stopped.signum == signal.SIGTERM
        assert stopped.__cause__ is raised.value
        assert as_stop(stopped) is stopped
    assert as_stop(raised.value) is None  # the stop is over: an error is an error again
