"""Run real servers on loopback for tests: uvicorn in a thread, on a free or given port."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn

from tts_protocol import STREAM_PATH


class ServerThread:
    """An ASGI app served by uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self, app: Any, port: int = 0) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", ws_max_size=1 << 20
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self.port = port

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}{STREAM_PATH}"

    def start(self, limit_s: float = 30.0) -> ServerThread:
        """Start serving and wait until the socket is bound."""
        self._thread.start()
        deadline = time.monotonic() + limit_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Stop serving; open connections are closed."""
        self._server.should_exit = True
        self._thread.join(timeout=10)
