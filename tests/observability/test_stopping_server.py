"""``observability.stopping_server``: uvicorn stopped by a signal, then forced by a second one,
in process: the first signal's ``Stopped``, the request still running cancelled and counted, the
app's own shutdown run, and nothing logged as an error."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
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
    """An app with one request that never ends (``/hang``); records its own shutdown."""

    def __init__(self) -> None:
        self.hanging = threading.Event()
        self.closed = False

        @contextlib.asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncIterator[None]:
            yield
            self.closed = True

        async def hang(_request: Request) -> Response:
            self.hanging.set()
            await asyncio.Event().wait()
            return Response()

        self.asgi = Starlette(routes=[Route("/hang", hang)], lifespan=lifespan)


def signals_once_hanging(app: App, first: int, second: int, url: str) -> None:
    """In a thread: request ``/hang``, then ``first`` and ``second`` to this process."""

    def request() -> None:
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url, timeout=10)

    def send() -> None:
        threading.Thread(target=request, daemon=True).start()
        if app.hanging.wait(10):
            os.kill(os.getpid(), first)
            time.sleep(0.3)  # uvicorn waits for the request meanwhile
            os.kill(os.getpid(), second)

    threading.Thread(target=send, daemon=True).start()


@pytest.mark.parametrize("first", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_forces_the_stop_the_first_names_it(
    first: int, caplog: pytest.LogCaptureFixture
) -> None:
    app = App()
    listening = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listening.getsockname()[1]}/hang"
    server = StoppingServer(uvicorn.Config(app.asgi, log_config=None, lifespan="on"))
    caplog.set_level(logging.INFO)
    with stops_caught(), pytest.raises(Stopped) as stopped:
        signals_once_hanging(app, first, signal.SIGINT, url)
        server.run(sockets=[listening])
    assert stopped.value.signum == first
    assert (server.cut, app.closed) == (1, True)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
