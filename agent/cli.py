"""``voice-agent``: run the local stack.

    voice-agent dev [--host 127.0.0.1] [--port 8000] [--tts-url ws://...] [--model demo]

Without ``--tts-url`` it starts the local TTS server (``tts-server``, embedded CPU model) as a
child process on ``--tts-port`` and waits until its ``/ping`` proves a real synthesis.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace

import httpx
import uvicorn

from agent.config import AgentConfig

TTS_READY_LIMIT_S = 180.0


class LocalTTSFailed(RuntimeError):
    """The local TTS server did not become healthy."""


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ping", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def local_tts(host: str, port: int) -> Iterator[str]:
    """A healthy TTS server at ``host:port``: reuse a running one, else start a child process."""
    http = f"http://{host}:{port}"
    ws = f"ws://{host}:{port}/invocations-bidirectional-stream"
    if _healthy(http):
        yield ws
        return
    command = [sys.executable, "-m", "tts_server", "--host", host, "--port", str(port)]
    child = subprocess.Popen(command)
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


def dev(args: argparse.Namespace) -> None:
    """Start the dev server (and the local TTS server unless ``--tts-url`` is given)."""
    from agent.devserver import create_app

    config = AgentConfig.from_env()
    if args.model:
        config = replace(config, model=args.model)
    with contextlib.ExitStack() as stack:
        tts_url = args.tts_url or os.environ.get("TTS_URL")
        if not tts_url and not config.sagemaker_endpoint:
            tts_url = stack.enter_context(local_tts(args.host, args.tts_port))
        if tts_url:
            config = replace(config, tts_url=tts_url)
        print(
            f"\n  voice chat:  http://{args.host}:{args.port}/\n"
            f"  model:       {config.model}"
            f"{' (offline demo model, not a real LLM)' if config.model == 'demo' else ''}\n"
            f"  speech:      {config.sagemaker_endpoint or config.tts_url}\n",
            flush=True,
        )
        uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="warning")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="voice-agent", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dev_parser = commands.add_parser("dev", help="run the local dev server and voice chat")
    dev_parser.add_argument("--host", default="127.0.0.1")
    dev_parser.add_argument("--port", type=int, default=8000)
    dev_parser.add_argument("--tts-url", help="use this TTS WebSocket instead of a local server")
    dev_parser.add_argument("--tts-port", type=int, default=8080, help="port of the local server")
    dev_parser.add_argument("--model", help="demo | bedrock:<id> | openai:<base-url>#<model>")
    dev_parser.set_defaults(run=dev)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
