"""The dev server's uvicorn run.

``serve_dev`` serves until Ctrl+C or SIGTERM (uvicorn's graceful shutdown, up to 5 s for the
requests still running, forced by a second signal: ``observability.stopping_server``; then
``observability.stopping.Stopped`` on the way up, naming the server and the requests the stop
cut short, and what cut them) and raises ``ServerFailed``, with uvicorn's own reason in one
line, when the server never started.
(What each command keeps when it is stopped: ``voice_agent_cli.entry.KEPT``.)
"""

from __future__ import annotations

import logging
import socket

import uvicorn
from starlette.types import ASGIApp

from agent.config import AgentConfig
from observability.stopping import Stopped
from observability.stopping_server import StoppingServer


class BadSetting(ValueError):
    """A variable holds a value its setting refuses (``agent.config`` names it)."""


def settings_from_env() -> AgentConfig:
    """``AgentConfig.from_env()``; raises ``BadSetting`` for a value it refuses."""
    try:
        return AgentConfig.from_env()
    except ValueError as exc:
        raise BadSetting(str(exc)) from exc


class ServerFailed(RuntimeError):
    """The dev server's start-up failed (uvicorn said why)."""


class StartupReason(logging.Filter):
    """Holds back uvicorn's error records until the server starts, keeping the last line of
    each (the exception's own line of a traceback): the reason, in one line."""

    def __init__(self, server: uvicorn.Server) -> None:
        super().__init__()
        self._server = server
        self.reason = "its start-up failed"

    def filter(self, record: logging.LogRecord) -> bool:
        if self._server.started or record.levelno < logging.ERROR:
            return True
        lines = [line for line in record.getMessage().splitlines() if line.strip()]
        if lines and not lines[-1].startswith("Application startup failed"):
            self.reason = lines[-1].strip()
        return False


def serve_dev(app: ASGIApp, listening: socket.socket, host: str) -> None:
    """Serve ``app`` on ``listening`` until stopped; raises ``ServerFailed`` if it never
    started, ``Stopped`` (its ``ended`` naming the server) once it has shut down."""
    config = uvicorn.Config(app, host=host, log_level="warning", log_config=None)
    server = StoppingServer(config)
    reason = StartupReason(server)
    errors = logging.getLogger("uvicorn.error")
    errors.addFilter(reason)
    address = "{}:{}".format(*listening.getsockname()[:2])
    try:
        server.run(sockets=[listening])
    except Stopped as stopped:
        name = f"the dev server on {address}"
        if server.cut_short:
            name += f" ({server.cut_short})"
            stopped.cut = True
        stopped.ended.append(name)
        raise
    except SystemExit as exc:  # uvicorn's exit when its start-up fails
        if server.started:
            raise
        raise ServerFailed(f"the dev server on {address} did not start: {reason.reason}") from exc
    finally:
        errors.removeFilter(reason)
    if not server.started:
        raise ServerFailed(f"the dev server on {address} did not start: {reason.reason}")
