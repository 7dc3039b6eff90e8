"""``observability.stopping_server``: uvicorn stopped by a signal, then forced by a second one,
or by one signal alone with a request still running past the grace, in process: the first
signal's ``Stopped``, the request still running cancelled and counted (and what cut it), the
app's own shutdown run, and nothing logged as an error; uvicorn's own limit refused."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from observability.stopping import Stopped, stops_caught
from observability.stopping_server import StoppingServer


class App:
    """An app with one request that never ends (``/hang``); records its own shutdown, and what
    the client of ``/hang`` got (``answer``: the status, or the error's name)."""

    def __init__(self) -> None:
        self.hanging = threading.Event()
        self.closed = False
        self.answer: queue.Queue[str] = queue.Queue()

        @contextlib.asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncIterator[None]:
            yield
            self.closed = True

        async def hang(_request: Request) -> Response:
            self.hanging.set()
            await asyncio.Event().wait()
            return Response()

        self.asgi = Starlette(routes=[Route("/hang", hang)], lifespan=lifespan)


def signals_once_hanging(app: App, url: str, *signals: int) -> None:
    """In a thread: request ``/hang``, then each of ``signals`` to this process."""

    def request() -> None:
        try:
            app.answer.put(str(httpx.get(url, timeout=10).status_code))
        except httpx.HTTPError as error:
            app.answer.put(type(error).__name__)

    def send() -> None:
        threading.Thread(target=request, daemon=True).start()
        if app.hanging.wait(10):
            for signum in signals:
                os.kill(os.getpid(), signum)
                time.sleep(0.3)  # uvicorn waits for the request meanwhile

    threading.Thread(target=send, daemon=True).start()


def stopped_while_hanging(app: App, server: StoppingServer, *signals: int) -> Stopped:
    """``server`` serving ``app``, stopped by ``signals`` once ``/hang`` runs: the ``Stopped``."""
    listening = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listening.getsockname()[1]}/hang"
    with stops_caught(), pytest.raises(Stopped) as stopped:
        signals_once_hanging(app, url, *signals)
        server.run(sockets=[listening])
    return stopped.value


def config(app: App, **settings: float) -> uvicorn.Config:
    return uvicorn.Config(app.asgi, log_config=None, lifespan="on", **settings)


@pytest.mark.parametrize("first", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_forces_the_stop_the_first_names_it(
    first: int, caplog: pytest.LogCaptureFixture
) -> None:
    app = App()
    server = StoppingServer(config(app))
    caplog.set_level(logging.INFO)
    assert stopped_while_hanging(app, server, first, signal.SIGINT).signum == first
    assert (server.cut, server.overdue, app.closed) == (1, False, True)
    assert app.answer.get(timeout=10) == "500"  # cut by the server, not the client's timeout
    assert server.cut_short == "the second signal cut short 1 request(s) still running"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("first", [signal.SIGINT, signal.SIGTERM])
def test_one_signal_cuts_a_request_still_running_past_the_grace(
    first: int, caplog: pytest.LogCaptureFixture
) -> None:
    """uvicorn alone would wait for ``/hang`` for ever (the dev server), or cancel it with
    "Cancel 1 running task(s)" and its traceback past its own limit (the TTS server)."""
    app = App()
    server = StoppingServer(config(app), grace_s=0.5)
    caplog.set_level(logging.INFO)
    assert stopped_while_hanging(app, server, first).signum == first
    assert (server.cut, server.overdue, app.closed) == (1, True, True)
    assert app.answer.get(timeout=10) == "500"
    assert server.cut_short == "the stop's 0.5 s limit cut short 1 request(s) still running"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_uvicorns_own_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="timeout_graceful_shutdown"):
        StoppingServer(config(App(), timeout_graceful_shutdown=5.0))
