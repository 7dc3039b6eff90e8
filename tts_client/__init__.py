"""Client for the Kokoro TTS server: one persistent, pipelined synthesis session.

    async with TTSSession(WebSocketTransport("ws://127.0.0.1:8080/ws")) as session:
        segment = await session.speak("Hello there.")
        async for pcm in segment:  # s16le mono at session.ready.sample_rate
            play(pcm)

See docs/tts_client.md. The SageMaker transport lives in ``tts_client.transports.sagemaker`` (Python
>= 3.12, the ``sagemaker`` extra).
"""

from tts_client.config import SessionConfig
from tts_client.errors import (
    SegmentFailed,
    ServerError,
    SessionClosed,
    TransportUnavailable,
    TTSBusy,
    TTSConnectionError,
    TTSError,
    TTSProtocolError,
    TTSTimeout,
)
from tts_client.pool import SessionPool
from tts_client.segment import SegmentStatus, SegmentStream, SegmentTimings
from tts_client.session import TTSSession
from tts_client.transports import Connection, Transport, WebSocketTransport

__all__ = [
    "Connection",
    "SegmentFailed",
    "SegmentStatus",
    "SegmentStream",
    "SegmentTimings",
    "ServerError",
    "SessionClosed",
    "SessionConfig",
    "SessionPool",
    "TTSBusy",
    "TTSConnectionError",
    "TTSError",
    "TTSProtocolError",
    "TTSSession",
    "TTSTimeout",
    "Transport",
    "TransportUnavailable",
    "WebSocketTransport",
]
