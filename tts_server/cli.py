"""``tts-server``: run the Kokoro speech server with uvicorn, draining on SIGTERM.

Ctrl+C (SIGINT) or SIGTERM: the drain, uvicorn's shutdown, then one line on stderr (what
stopped, and whether the drain let every session finish) and the end by the signal itself
(``observability.stopping``: a shell's status 130 or 143). With ``--no-banner`` (the child of
``voice-agent dev``, which prints its own) the line is left out too.

A start-up poll that asks for ``READINESS_POLL`` (``voice-agent dev``'s, five times a second
until the engine is warm) is left out of the access log; every other request, ``/ping``
included, is logged.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Sequence

import uvicorn
from fastapi import FastAPI

from observability import logs, tracing
from observability.stopping import STARTING, Stopped, as_stop, catch_stops, end_stopped, stop_line
from observability.stopping_server import StoppingServer
from tts_protocol import PING_PATH, READINESS_POLL, STREAM_PATH
from tts_server.app import create_app
from tts_server.drain import Drain
from tts_server.engines.window_trace import trace_to
from tts_server.service import SynthesisService
from tts_server.settings import Settings, parse_settings
from tts_server.stream import CLOSE_GRACE_S

HTTP_GRACE_S = 5.0  # after the drain: how long the stop waits for HTTP requests still running


class QuietReadinessPoll(logging.Filter):
    """Drops uvicorn's access lines of ``READINESS_POLL``, keeps every other."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return READINESS_POLL not in args  # (client, method, path?query, version, status)


class DrainingServer(StoppingServer):
    """uvicorn whose shutdown (SIGTERM, SIGINT) first runs the app's ``Drain``.

    uvicorn's own shutdown closes every WebSocket at once with 1012; the drain before it lets
    open sessions finish their queued segments, up to ``drain_s``. A second signal (Ctrl+C twice,
    or SIGTERM then Ctrl+C) cuts it short.
    """

    def __init__(self, config: uvicorn.Config, drain: Drain, drain_s: float) -> None:
        super().__init__(config, grace_s=HTTP_GRACE_S)
        self._drain = drain
        self._drain_s = drain_s
        self.drained: bool | None = None  # None: no shutdown yet

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Drain, then uvicorn's shutdown: stop listening, close what is left, lifespan end."""
        self.drained = await self._drain.run(self._drain_s, abandon=lambda: self.force_exit)
        await super().shutdown(sockets)


def server(app: FastAPI, settings: Settings) -> DrainingServer:
    """The uvicorn server for ``app`` (made by ``create_app``) with the limits of ``settings``."""
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        log_config=None,  # uvicorn's loggers go through the root handler, in LOG_FORMAT
        ws_max_size=settings.max_frame_bytes,
    )
    service: SynthesisService = app.state.service
    return DrainingServer(config, service.drain, settings.drain_s)


def listen(config: uvicorn.Config, send_timeout_s: float) -> socket.socket:
    """The listening socket; on Linux, the kernel drops a connection whose peer has taken no
    data for ``send_timeout_s`` (plus the close grace), so a stuck client's socket is freed."""
    sock = config.bind_socket()
    if hasattr(socket, "TCP_USER_TIMEOUT"):  # inherited by every accepted connection
        timeout_ms = int((send_timeout_s + CLOSE_GRACE_S) * 1000)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, timeout_ms)
    return sock


def serve(app: FastAPI, settings: Settings) -> None:
    """Serve ``app`` until SIGTERM or SIGINT, then drain and end by the signal, with one line
    (none with ``--no-banner``)."""
    catch_stops()
    uvicorn_server = server(app, settings)
    try:
        uvicorn_server.run(sockets=[listen(uvicorn_server.config, settings.send_timeout_s)])
    except Stopped as stopped:
        kept = drained(uvicorn_server.drained, settings, uvicorn_server.cut_short)
        line = stop_line("tts-server", stopped, kept)
        end_stopped(line if settings.banner else "", stopped.signum)


def drained(finished: bool | None, settings: Settings, cut_short: str = "") -> str:
    """What the drain kept, and which requests the stop cut short after it (``cut_short``,
    ``StoppingServer``'s): the second half of the stop line."""
    if finished is None:
        return "it had not started serving; nothing was lost"
    if finished:
        said = "every open session finished its queued speech first"
    else:
        said = (
            f"the drain was cut short (a second signal, or its {settings.drain_s:g} s): sessions "
            "still speaking were closed with 1012"
        )
    if cut_short:
        said += f"; {cut_short}"
    if finished and not cut_short:
        return f"{said}; nothing was lost"
    return f"{said}, and their clients may retry"


def main(argv: Sequence[str] | None = None) -> None:
    """Parse flags/env and serve until interrupted."""
    catch_stops()
    settings: Settings | None = None
    try:
        settings = parse_settings(argv)
        logs.configure(settings.log_level)  # LOG_FORMAT: json (the image) or text
        tracing.configure("tts-server")  # on with the OTEL_* variables
        logging.getLogger("uvicorn.access").addFilter(QuietReadinessPoll())
        if settings.window_trace is not None:
            trace_to(settings.window_trace)
        app = create_app(settings)
    except BaseException as error:  # a stop while the engine loads, or an error it caused
        if (stopped := as_stop(error)) is None:
            raise
        quiet = settings is not None and not settings.banner
        line = stop_line("tts-server", stopped, STARTING)
        end_stopped("" if quiet else line, stopped.signum)
    if settings.banner:
        print(banner(settings), flush=True)
    serve(app, settings)


def banner(settings: Settings) -> str:
    """What the server prints at start: where it listens, and how to try it."""
    address = f"{settings.host}:{settings.port}"
    return (
        f"tts-server: {settings.engine} engine on http://{address}\n"
        f"  readiness:  curl -s http://{address}{PING_PATH}\n"
        f"  batch:      curl -s -X POST http://{address}/invocations "
        "-H 'Content-Type: application/json' -d '{\"text\": \"Hello there.\"}' -o hello.wav\n"
        f"  streaming:  ws://{address}{STREAM_PATH}"
    )


if __name__ == "__main__":
    main()
