"""``tts-server``: run the Kokoro speech server with uvicorn."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import uvicorn

from tts_protocol import PING_PATH, STREAM_PATH
from tts_server.app import create_app
from tts_server.settings import parse_settings


def main(argv: Sequence[str] | None = None) -> None:
    """Parse flags/env and serve until interrupted."""
    settings = parse_settings(argv)
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(levelname)s %(name)s %(message)s"
    )
    app = create_app(settings)
    address = f"{settings.host}:{settings.port}"
    print(
        f"tts-server: {settings.engine} engine on http://{address}\n"
        f"  readiness:  curl -s http://{address}{PING_PATH}\n"
        f"  batch:      curl -s -X POST http://{address}/invocations "
        "-H 'Content-Type: application/json' -d '{\"text\": \"Hello there.\"}' -o hello.wav\n"
        f"  streaming:  ws://{address}{STREAM_PATH}",
        flush=True,
    )
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        ws_max_size=1 << 20,
    )


if __name__ == "__main__":
    main()
