"""``voice-agent``: run the local stack, measure it, accept an endpoint, audit the environment.

    voice-agent dev [--host 127.0.0.1] [--port 8000] [--tts-url ws://...] [--model demo]
    voice-agent bench [--quick] [--tts-url ws://...] [--agent-url URL | --agent-arn ARN]
    voice-agent acceptance (TTS-URL | --endpoint NAME --region R)
    voice-agent audit [--allow-offline] [--env PATH ...]

Without ``--tts-url``, ``dev`` starts the local TTS server (``tts-server``, embedded CPU model)
as a child process on ``--tts-port`` and waits until its ``/ping`` proves a real synthesis.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace

import httpx
import uvicorn

from agent.config import AgentConfig

TTS_READY_LIMIT_S = 180.0
PR_SET_PDEATHSIG = 1  # prctl option, <linux/prctl.h>


class LocalTTSFailed(RuntimeError):
    """The local TTS server did not become healthy."""


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ping", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the parent dies, however it dies (Linux).

    uvicorn re-raises SIGTERM after its shutdown, which kills the parent before any ``finally``
    could stop the child.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@contextlib.contextmanager
def local_tts(host: str, port: int, log_level: str | None = None) -> Iterator[str]:
    """A healthy TTS server at ``host:port``: reuse a running one, else start a child process."""
    http = f"http://{host}:{port}"
    ws = f"ws://{host}:{port}/invocations-bidirectional-stream"
    if _healthy(http):
        yield ws
        return
    command = [sys.executable, "-m", "tts_server", "--host", host, "--port", str(port)]
    command += ["--log-level", log_level] if log_level else []
    child = subprocess.Popen(command, preexec_fn=_die_with_parent)
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
    from agent import audit, bench
    from tts_client import acceptance

    parser = argparse.ArgumentParser(prog="voice-agent", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dev_parser = commands.add_parser("dev", help="run the local dev server and voice chat")
    dev_parser.add_argument("--host", default="127.0.0.1")
    dev_parser.add_argument("--port", type=int, default=8000)
    dev_parser.add_argument("--tts-url", help="use this TTS WebSocket instead of a local server")
    dev_parser.add_argument("--tts-port", type=int, default=8080, help="port of the local server")
    dev_parser.add_argument("--model", help="demo | bedrock:<id> | openai:<base-url>#<model>")
    dev_parser.set_defaults(run=dev)
    for name, module, summary in (
        ("bench", bench, "latency benchmark: first audio vs. completion, stream vs. batch"),
        ("acceptance", acceptance, "acceptance test of a TTS endpoint; exit 1 on any failure"),
        ("audit", audit, "dependency floors, vulnerability scan and SBOMs"),
    ):
        sub = commands.add_parser(
            name,
            help=summary,
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    args = parser.parse_args(argv)
    if status := args.run(args):
        raise SystemExit(status)


if __name__ == "__main__":
    main()
