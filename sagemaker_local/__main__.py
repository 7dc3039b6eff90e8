"""Run the local SageMaker emulator in front of a TTS container (Python >= 3.12).

    python -m sagemaker_local --container http://127.0.0.1:8080 --port 8443 --tls-dir /tmp/sm

It writes a fresh CA and server certificate into ``--tls-dir`` and prints the environment that
points ``SageMakerTransport`` (and so the agent and ``voice-agent acceptance --endpoint``) at it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sagemaker_local.certs import make_local_tls
from sagemaker_local.emulator import MAX_STREAM_S, SageMakerEmulator


def environment(emulator: SageMakerEmulator) -> dict[str, str]:
    """The variables a client needs to reach ``emulator`` through the real SDK."""
    return {
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2": emulator.url,
        "TTS_SAGEMAKER_CA_BUNDLE": str(emulator.tls.ca_file),
        "TTS_SAGEMAKER_ENDPOINT": emulator.endpoint_name,
    }


async def _serve(args: argparse.Namespace, tls_dir: Path) -> None:
    emulator = SageMakerEmulator(
        args.container,
        make_local_tls(tls_dir),
        endpoint_name=args.endpoint_name,
        host=args.host,
        port=args.port,
        max_stream_s=args.max_stream_s,
    )
    async with emulator:
        exports = " ".join(f"{k}={v}" for k, v in environment(emulator).items())
        print(f"sagemaker-local: {emulator.url} -> {args.container}\n  {exports}", flush=True)
        await asyncio.Future()


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m sagemaker_local", description=__doc__)
    parser.add_argument("--container", required=True, help="the container's http://HOST:PORT")
    parser.add_argument("--endpoint-name", default="kokoro-tts")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8443)
    parser.add_argument("--tls-dir", type=Path, help="where to write the CA (default: temp)")
    parser.add_argument("--max-stream-s", type=float, default=MAX_STREAM_S)
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        tls_dir = args.tls_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(args, tls_dir))


if __name__ == "__main__":
    main()
