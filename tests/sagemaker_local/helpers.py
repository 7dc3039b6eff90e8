"""Shared pieces of the emulator tests: fake AWS credentials, TLS, a recording container."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import boto3
from websockets.asyncio.server import ServerConnection, serve

from sagemaker_local.certs import LocalTLS, make_local_tls
from sagemaker_local.emulator import SageMakerEmulator
from tts_client.transports.sagemaker import SageMakerTransport, http2_client


def fake_aws() -> Any:
    """Static fake credentials: the SDK signs with them, nothing leaves the machine."""
    return boto3.Session(
        aws_access_key_id="AKIDTEST", aws_secret_access_key="secret", region_name="us-east-1"
    )


def transport_for(
    emulator: SageMakerEmulator, endpoint_name: str | None = None, **kwargs: Any
) -> SageMakerTransport:
    """The real SDK transport, pointed at ``emulator`` and trusting its CA."""
    return SageMakerTransport(
        endpoint_name or emulator.endpoint_name,
        boto3_session=fake_aws(),
        endpoint_url=emulator.url,
        http_client=http2_client(str(emulator.tls.ca_file)),
        **kwargs,
    )


def local_tls(tmp_path: Path) -> LocalTLS:
    return make_local_tls(tmp_path / "tls")


class RecordingContainer:
    """A WebSocket container that records each frame's type and answers by a script."""

    BIG = bytes(range(256)) * 160  # 40 KiB: several PARTIAL parts at 16 KiB

    def __init__(self, close_code: int | None = None) -> None:
        self.frames: list[tuple[str, bytes]] = []  # ("binary" | "text", data)
        self.paths: list[str] = []
        self._close_code = close_code  # after the first message: close with it

    async def handle(self, ws: ServerConnection) -> None:
        self.paths.append(ws.request.path if ws.request else "")
        await ws.send(json.dumps({"type": "hello"}))
        async for message in ws:
            kind = "text" if isinstance(message, str) else "binary"
            data = message.encode() if isinstance(message, str) else message
            self.frames.append((kind, data))
            if self._close_code is not None:
                await ws.close(self._close_code, "container gave up")
                return
            await ws.send(self.BIG)
            await ws.send(json.dumps({"echo": data.decode()}))

    async def serve(self) -> AsyncIterator[str]:
        """Serve; yield the container's ``http://`` address."""
        async with serve(self.handle, "127.0.0.1", 0) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            yield f"http://127.0.0.1:{port}"
