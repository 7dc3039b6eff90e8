"""A local SageMaker runtime that serves ``InvokeEndpointWithBidirectionalStream`` over HTTP/2.

The real SDK connects to it over TLS (hypercorn, ALPN ``h2``) with SigV4-signed requests. Each
call opens one WebSocket to the container's ``/invocations-bidirectional-stream`` (or the path
in ``X-Amzn-SageMaker-Model-Invocation-Path``); every request part is forwarded as a BINARY
WebSocket message, as SageMaker delivers it; every container message comes back as
``PayloadPart`` events (text: ``DataType=UTF8``, binary: ``BINARY``) cut into PARTIAL parts.
A container that closes normally ends the response stream; one that breaks the connection
yields ``ModelStreamError`` (``StreamBroken``); a stream older than ``max_stream_s`` (SageMaker:
30 minutes) is ended with ``ModelStreamError`` (``ModelInvocationTimeExceeded``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from hypercorn.asyncio import serve
from hypercorn.config import Config
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    ConnectionClosedOK,
    InvalidHandshake,
    InvalidStatus,
)

from sagemaker_local.certs import LocalTLS
from sagemaker_local.events import (
    BINARY,
    EVENT_STREAM,
    PARTIAL,
    SIGNED_PAYLOAD,
    UTF8,
    RequestPart,
    RequestReader,
    StreamRejected,
    error_body,
    exception_event,
    payload_parts,
)

log = logging.getLogger("sagemaker_local")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

PATH = re.compile(r"^/endpoints/(?P<name>[^/]+)/invocations-bidirectional-stream$")
CONTAINER_PATH = "/invocations-bidirectional-stream"
MAX_STREAM_S = 30 * 60.0  # SageMaker's limit on one bidirectional stream
PART_BYTES = 16 * 1024
DEFAULT_VARIANT = "AllTraffic"


@dataclass
class Invocation:
    """What one call sent: its headers and every request part, in order."""

    endpoint_name: str
    headers: dict[str, str]
    parts: list[RequestPart] = field(default_factory=list)
    outcome: str = "open"  # open | completed | stream_broken | timed_out | rejected
    client_gone: bool = False


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def signature_problem(headers: dict[str, str]) -> str | None:
    """Why the request is not a SigV4 event-stream request, or None."""
    authorization = headers.get("authorization", "")
    if not authorization.startswith("AWS4-HMAC-SHA256 Credential="):
        return "missing SigV4 Authorization header"
    if "/sagemaker/aws4_request" not in authorization or "Signature=" not in authorization:
        return f"not signed for sagemaker: {authorization.split(',')[0]}"
    if "x-amz-date" not in headers:
        return "missing X-Amz-Date"
    if headers.get("x-amz-content-sha256") != SIGNED_PAYLOAD:
        return f"X-Amz-Content-SHA256 is not {SIGNED_PAYLOAD}"
    return None


async def _request_body(receive: Receive, invocation: Invocation) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] != "http.request":  # http.disconnect: the client has gone
            invocation.client_gone = True
            return
        if body := message.get("body"):
            yield body
        if not message.get("more_body"):
            return


class SageMakerEmulator:
    """Serve one endpoint name on ``host:port`` (0: a free port), backed by ``container``."""

    def __init__(
        self,
        container: str,
        tls: LocalTLS,
        *,
        endpoint_name: str = "kokoro-tts",
        variant: str = DEFAULT_VARIANT,
        host: str = "127.0.0.1",
        port: int = 0,
        part_bytes: int = PART_BYTES,
        max_stream_s: float = MAX_STREAM_S,
    ) -> None:
        self.container = container.rstrip("/")  # http://HOST:PORT of the container
        self.tls = tls
        self.endpoint_name = endpoint_name
        self.variant = variant
        self.part_bytes = part_bytes
        self.max_stream_s = max_stream_s
        self.invocations: list[Invocation] = []
        self._socket = socket.create_server((host, port))
        self.port: int = self._socket.getsockname()[1]
        self._stop = asyncio.Event()
        self._server: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """The endpoint URL for the SDK (``localhost``: the name on the certificate)."""
        return f"https://localhost:{self.port}"

    async def start(self) -> SageMakerEmulator:
        """Listen (the socket is bound already; the port is known before this)."""
        config = Config()
        config.bind = [f"fd://{self._socket.detach()}"]  # hypercorn owns the socket now
        config.certfile, config.keyfile = str(self.tls.cert_file), str(self.tls.key_file)
        config.accesslog = None
        config.loglevel = "WARNING"
        self._server = asyncio.create_task(
            serve(self.app, config, shutdown_trigger=self._stop.wait)  # type: ignore[arg-type]
        )
        return self

    async def aclose(self) -> None:
        """Stop serving; open streams are cut."""
        self._stop.set()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server, 10)
        else:
            self._socket.close()

    async def __aenter__(self) -> SageMakerEmulator:
        return await self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    # --- ASGI --------------------------------------------------------------------------------

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI application hypercorn serves."""
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": f"{message['type']}.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        headers = _headers(scope)
        match = PATH.match(scope["path"])
        if scope["method"] != "POST" or match is None:
            await _error(send, 404, "UnknownOperationException", f"no route {scope['path']}")
            return
        if problem := signature_problem(headers):
            await _error(send, 403, "MissingAuthenticationTokenException", problem)
            return
        name = match["name"]
        if name != self.endpoint_name:
            message = f"Endpoint {name} of account 000000000000 not found."
            await _error(send, 400, "InputValidationError", message, "ValidationError")
            return
        if headers.get("content-type") != EVENT_STREAM:
            await _error(send, 400, "InputValidationError", f"Content-Type must be {EVENT_STREAM}")
            return
        invocation = Invocation(name, headers)
        self.invocations.append(invocation)
        await self._invoke(invocation, receive, send)

    async def _invoke(self, invocation: Invocation, receive: Receive, send: Send) -> None:
        path = invocation.headers.get("x-amzn-sagemaker-model-invocation-path", CONTAINER_PATH)
        query = invocation.headers.get("x-amzn-sagemaker-model-query-string")
        url = "ws" + self.container.removeprefix("http") + "/" + path.lstrip("/")
        url += f"?{query}" if query else ""
        try:
            container = await connect(url, max_size=None, compression=None, proxy=None)
        except InvalidStatus as exc:
            invocation.outcome = "rejected"
            status = exc.response.status_code
            await _error(
                send,
                424,
                "ModelError",
                f"Received server error ({status}) from model",
                "ModelError",
                OriginalStatusCode=status,
            )
            return
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            invocation.outcome = "rejected"
            await _error(send, 424, "ModelError", f"cannot reach the model: {exc}", "ModelError")
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", EVENT_STREAM.encode()),
                    (b"x-amzn-invoked-production-variant", self.variant.encode()),
                ],
            }
        )
        async with container:
            uplink = asyncio.create_task(self._uplink(invocation, receive, container))
            try:
                async with asyncio.timeout(self.max_stream_s):
                    await self._downlink(invocation, container, send)
            except TimeoutError:
                invocation.outcome = "timed_out"
                limit = f"the stream exceeded {self.max_stream_s:.0f} s"
                await _body(
                    send, exception_event("ModelStreamError", limit, "ModelInvocationTimeExceeded")
                )
            finally:
                uplink.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await uplink
        if not invocation.client_gone:
            await _body(send, b"", more=False)

    async def _uplink(
        self, invocation: Invocation, receive: Receive, container: ClientConnection
    ) -> None:
        """Client parts → BINARY WebSocket messages; the end of input closes the WebSocket."""
        body = _request_body(receive, invocation)
        reader = RequestReader(body)
        held: list[bytes] = []
        try:
            while (part := await reader.next_part()) is not None:
                invocation.parts.append(part)
                held.append(part.payload)
                if part.completion_state != PARTIAL:
                    await container.send(b"".join(held))  # bytes: always a BINARY frame
                    held.clear()
        except StreamRejected as exc:
            log.warning("rejected request stream: %s", exc.message)
            await container.close(1008, exc.message[:100])
            return
        except ConnectionClosed:
            return
        async for _ in body:  # up to the request's END_STREAM, so the client finishes first
            pass
        await container.close()

    async def _downlink(
        self, invocation: Invocation, container: ClientConnection, send: Send
    ) -> None:
        """Container messages → ``PayloadPart`` events; how it closes decides the ending."""
        try:
            async for message in container:
                if isinstance(message, str):
                    data, data_type = message.encode(), UTF8
                else:
                    data, data_type = message, BINARY
                for event in payload_parts(data, data_type, self.part_bytes):
                    await _body(send, event)
        except ConnectionClosedOK:
            pass
        except ConnectionClosed as exc:
            invocation.outcome = "stream_broken"
            await _body(send, exception_event("ModelStreamError", str(exc), "StreamBroken"))
            return
        invocation.outcome = "completed"


async def _body(send: Send, data: bytes, *, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": more})


async def _error(
    send: Send,
    status: int,
    error_type: str,
    message: str,
    error_code: str | None = None,
    **members: object,
) -> None:
    """An HTTP error response in restJson1's shape: ``x-amzn-errortype`` and a JSON body."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"x-amzn-errortype", error_type.encode()),
            ],
        }
    )
    await _body(send, error_body(message, error_code, **members), more=False)
