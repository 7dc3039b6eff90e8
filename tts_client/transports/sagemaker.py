"""The SageMaker transport: ``InvokeEndpointWithBidirectionalStream`` over HTTP/2.

It uses the official ``aws-sdk-sagemaker-runtime-http2`` client, which needs Python >= 3.12
(the ``sagemaker`` extra); the SDK is imported only when a ``SageMakerTransport`` is created,
so this module imports anywhere. Requests go out as ``RequestPayloadPart`` events with
``DataType=UTF8`` set explicitly; responses are ``PayloadPart`` events whose ``DataType``
(UTF8 or BINARY) tells control frames from audio and whose ``CompletionState=PARTIAL`` parts
are reassembled into whole frames. ``ModelStreamError``/``InternalStreamFailure`` end the stream
as a ``TTSConnectionError`` (the session reconnects). Credentials come from the standard AWS
chain through a boto3 session and sign every request and event with SigV4.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tts_client.errors import TransportUnavailable, TTSConnectionError, TTSProtocolError
from tts_client.transports.base import DEFAULT_MAX_FRAME_BYTES, Frame

log = logging.getLogger("tts_client")

UTF8, BINARY = "UTF8", "BINARY"
PARTIAL, COMPLETE = "PARTIAL", "COMPLETE"
DEFAULT_MAX_CONNECTION_AGE = 25 * 60.0  # SageMaker ends a stream after 30 minutes
CLOSE_TIMEOUT_S = 2.0
ENDPOINT_URL_VARIABLE = "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2"  # the SDKs' naming rule
CA_BUNDLE_VARIABLE = "TTS_SAGEMAKER_CA_BUNDLE"  # a PEM trust store, for local emulators
INSTALL_HINT = "pip install 'kokoro-voice-agent[sagemaker]' on Python >= 3.12"

PayloadPart = Callable[[bytes, str, str], object]  # (bytes, DataType, CompletionState) -> event


class PartAssembler:
    """Joins PARTIAL payload parts into whole frames: ``str`` for UTF8, ``bytes`` for BINARY."""

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._max = max_frame_bytes
        self._parts: list[bytes] = []
        self._size = 0
        self._data_type: str | None = None

    def feed(
        self, payload: bytes, data_type: str | None, completion_state: str | None
    ) -> Frame | None:
        """Add one part; return the frame it completes, or None while it is PARTIAL."""
        data_type = data_type or BINARY  # what SageMaker assumes when DataType is omitted
        if data_type not in (UTF8, BINARY):
            raise TTSProtocolError(f"unknown DataType {data_type!r}")
        if completion_state not in (None, PARTIAL, COMPLETE):
            raise TTSProtocolError(f"unknown CompletionState {completion_state!r}")
        if self._parts and data_type != self._data_type:
            raise TTSProtocolError(f"DataType changed from {self._data_type} within a frame")
        self._size += len(payload)
        if self._size > self._max:
            raise TTSProtocolError(f"frame exceeds {self._max} bytes")
        self._data_type = data_type
        self._parts.append(payload)
        if completion_state == PARTIAL:
            return None
        data = b"".join(self._parts)
        self._parts, self._size = [], 0
        if data_type == BINARY:
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TTSProtocolError(f"UTF8 part is not UTF-8: {exc}") from exc


def _describe(exc: BaseException) -> str:
    code = getattr(exc, "error_code", None)
    return f"{type(exc).__name__}{f' [{code}]' if code else ''}: {exc}"


class SageMakerConnection:
    """A ``Connection`` over one SDK duplex event stream."""

    def __init__(
        self,
        stream: Any,
        payload_part: PayloadPart,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self._stream = stream
        self._payload_part = payload_part
        self._assembler = PartAssembler(max_frame_bytes)
        self._receiver: Any = None

    async def send(self, frame: Frame) -> None:
        """Send one COMPLETE part: ``str`` with ``DataType=UTF8``, ``bytes`` with ``BINARY``."""
        data, data_type = (frame.encode(), UTF8) if isinstance(frame, str) else (frame, BINARY)
        event = self._payload_part(data, data_type, COMPLETE)
        try:
            await self._stream.input_stream.send(event)
        except Exception as exc:  # the SDK raises OSError or its own errors
            raise TTSConnectionError(f"send failed: {_describe(exc)}") from exc

    async def recv(self) -> Frame:
        """The next whole frame, typed by the parts' ``DataType``."""
        while True:
            try:
                if self._receiver is None:  # the initial response: only when reading
                    _, self._receiver = await self._stream.await_output()
                event = await self._receiver.receive()
            except Exception as exc:  # ModelStreamError, InternalStreamFailure, I/O errors
                raise TTSConnectionError(f"stream failed: {_describe(exc)}") from exc
            if event is None:
                raise TTSConnectionError("the stream ended")
            part = getattr(event, "value", None)
            if isinstance(part, Exception):
                raise TTSConnectionError(f"stream failed: {_describe(part)}") from part
            if part is None or not hasattr(part, "bytes_"):
                log.warning("ignoring unknown SageMaker stream event %r", event)
                continue
            frame = self._assembler.feed(part.bytes_ or b"", part.data_type, part.completion_state)
            if frame is not None:
                return frame

    async def aclose(self) -> None:
        """End the input stream (a signed empty frame), then the response stream."""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(CLOSE_TIMEOUT_S):
                await self._stream.input_stream.close()
                if self._receiver is not None:
                    await self._receiver.close()


@dataclass(frozen=True, slots=True)
class _SDK:
    """The SDK names the transport uses, imported on first use."""

    client: Any
    config: Any
    input: Any
    identity: Any
    request_event: Any
    request_part: Any

    def payload_part(self, payload: bytes, data_type: str, completion_state: str) -> object:
        """A ``RequestStreamEventPayloadPart`` with both headers set."""
        part = self.request_part(
            bytes_=payload, data_type=data_type, completion_state=completion_state
        )
        return self.request_event(value=part)


def load_sdk() -> _SDK:
    """Import the SDK, or raise ``TransportUnavailable`` saying why and what to install."""
    if sys.version_info < (3, 12):
        version = ".".join(map(str, sys.version_info[:2]))
        raise TransportUnavailable(
            f"the SageMaker transport needs Python >= 3.12 (this is {version}): {INSTALL_HINT}"
        )
    try:
        from aws_sdk_sagemaker_runtime_http2 import client, config, models
        from smithy_aws_core.identity import AWSCredentialsIdentity
    except ImportError as exc:
        raise TransportUnavailable(f"the SageMaker SDK is not installed: {INSTALL_HINT}") from exc
    return _SDK(
        client=client.AsyncSageMakerRuntimeHTTP2Client,
        config=config.AsyncSageMakerRuntimeHTTP2Config,
        input=models.InvokeEndpointWithBidirectionalStreamInput,
        identity=AWSCredentialsIdentity,
        request_event=models.RequestStreamEventPayloadPart,
        request_part=models.RequestPayloadPart,
    )


def http2_client(ca_file: str | None = None) -> Any:
    """The SDK's CRT HTTP client, forced to HTTP/2 (the only one that streams both ways).

    ``ca_file`` (default: ``TTS_SAGEMAKER_CA_BUNDLE``) replaces the system trust store, e.g.
    with the local emulator's CA; the SDK has no TLS option yet, so its TLS context is rebuilt.
    """
    try:
        from awscrt import io
        from smithy_http.aio.crt import AWSCRTHTTPClient, AWSCRTHTTPClientConfig
    except ImportError as exc:
        raise TransportUnavailable(
            "awscrt is needed for HTTP/2: pip install 'aws-sdk-sagemaker-runtime-http2[awscrt]'"
        ) from exc
    client = AWSCRTHTTPClient(client_config=AWSCRTHTTPClientConfig(force_http_2=True))
    if ca_file := ca_file or os.environ.get(CA_BUNDLE_VARIABLE):
        options = io.TlsContextOptions()
        options.override_default_trust_store_from_path(ca_filepath=ca_file)
        client._tls_ctx = io.ClientTlsContext(options)
    return client


class Boto3Credentials:
    """An SDK identity resolver over a boto3 session: the standard AWS credential chain."""

    def __init__(self, session: Any, identity: Any) -> None:
        self._session = session
        self._identity = identity

    async def get_identity(self, *, properties: object) -> Any:
        """Current credentials (boto3 refreshes expiring ones; off the event loop)."""
        credentials = await asyncio.to_thread(self._frozen)
        return self._identity(
            access_key_id=credentials.access_key,
            secret_access_key=credentials.secret_key,
            session_token=credentials.token,
        )

    def _frozen(self) -> Any:
        credentials = self._session.get_credentials()
        if credentials is None:
            raise TTSConnectionError("no AWS credentials found in the standard chain")
        return credentials.get_frozen_credentials()


class SageMakerTransport:
    """Opens bidirectional streams to one SageMaker endpoint; one SDK client, reused."""

    def __init__(
        self,
        endpoint_name: str,
        region: str | None = None,
        *,
        boto3_session: Any = None,
        endpoint_url: str | None = None,
        target_variant: str | None = None,
        max_connection_age: float | None = DEFAULT_MAX_CONNECTION_AGE,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        http_client: Any = None,
    ) -> None:
        self._sdk = load_sdk()
        import boto3

        session = boto3_session or boto3.Session(region_name=region)
        self.region = region or session.region_name
        if not self.region:
            raise ValueError("no AWS region: pass region= or set AWS_REGION")
        self.endpoint_name = endpoint_name
        self.endpoint_url = (
            endpoint_url
            or os.environ.get(ENDPOINT_URL_VARIABLE)
            or f"https://runtime.sagemaker.{self.region}.amazonaws.com:8443"
        )
        self.target_variant = target_variant
        self.max_connection_age = max_connection_age
        self.max_frame_bytes = max_frame_bytes
        self._credentials = Boto3Credentials(session, self._sdk.identity)
        self._http_client = http_client
        self._client: Any = None

    @property
    def endpoint(self) -> str:
        """``sagemaker://REGION/ENDPOINT``."""
        return f"sagemaker://{self.region}/{self.endpoint_name}"

    async def client(self) -> Any:
        """The SDK client, created on first use with this transport's config."""
        if self._client is None:
            config = await self._sdk.config.resolve(
                region=self.region,
                endpoint_uri=self.endpoint_url,
                aws_credentials_identity_resolver=self._credentials,
                transport=self._http_client or http2_client(),
            )
            self._client = self._sdk.client(config=config)
        return self._client

    async def connect(self) -> SageMakerConnection:
        """Start one ``InvokeEndpointWithBidirectionalStream`` call."""
        request = self._sdk.input(
            endpoint_name=self.endpoint_name, target_variant=self.target_variant
        )
        await self._credentials.get_identity(properties={})  # fail fast without credentials
        try:
            client = await self.client()
            stream = await client.invoke_endpoint_with_bidirectional_stream(request)
        except TransportUnavailable:
            raise
        except Exception as exc:
            raise TTSConnectionError(f"{self.endpoint}: cannot open: {_describe(exc)}") from exc
        return SageMakerConnection(stream, self._sdk.payload_part, self.max_frame_bytes)

    async def aclose(self) -> None:
        """Close the SDK client (its HTTP/2 connections); ``connect`` makes a new one."""
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
