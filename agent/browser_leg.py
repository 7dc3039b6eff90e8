"""The browser leg's constants, shared by the server, its clients and the page.

The server (``agent.leg``, both front doors), the chat client (``voice_agent_cli.chat``), the
benchmark (``bench.latency.targets``) and the page (``agent/web/``, through ``page_module``,
which the dev server serves) all read them here. Standard library and ``tts_protocol`` only,
so that a client importing them loads nothing of the server. Contract: docs/events.md.
"""

from __future__ import annotations

import json
import struct

from tts_protocol import PLAYER_LEAD_S, SAMPLE_RATE

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"  # a header, or a query parameter
MAX_MESSAGE_BYTES = 32 * 1024  # a /ws message: AgentCore Runtime's WebSocket frame limit
# What the server sends in one /ws frame: AgentCore's quota says "32 KB" (docs/agent.md, "Frame
# sizes"); read as decimal kilobytes, the stricter reading, so a frame fits either way.
MAX_FRAME_BYTES = 32_000
IDLE_CLOSE = 1000  # the close code of an idle socket: a normal closure, reason "idle_timeout"
AUDIO_HEADER = struct.Struct(">I")  # a binary /ws frame: the segment's seq, big-endian; PCM follows
# A client's microphone frame: these 4 bytes, then PCM s16le mono at MIC_SAMPLE_RATE. No JSON
# text starts with a NUL byte, so a binary frame of JSON is never taken for audio.
MIC_MAGIC = b"\x00MIC"
MIC_SAMPLE_RATE = 16_000
PAGE_CONSTANTS = {
    "SESSION_HEADER": SESSION_HEADER,
    "SAMPLE_RATE": SAMPLE_RATE,
    "PLAYER_LEAD_S": PLAYER_LEAD_S,
    "MIC_MAGIC": list(MIC_MAGIC),
    "MIC_SAMPLE_RATE": MIC_SAMPLE_RATE,
}


def audio_frame(seq: int, pcm: bytes) -> bytes:
    """One binary audio frame: the header naming segment ``seq``, then its PCM."""
    return AUDIO_HEADER.pack(seq) + pcm


def audio_frames(seq: int, pcm: bytes, limit: int = MAX_FRAME_BYTES) -> list[bytes]:
    """``pcm`` of segment ``seq`` as binary audio frames of at most ``limit`` bytes each, cut
    between whole samples (s16le: 2 bytes); none for no PCM."""
    most = (limit - AUDIO_HEADER.size) // 2 * 2
    return [audio_frame(seq, pcm[i : i + most]) for i in range(0, len(pcm), most)]


def mic_frame(pcm: bytes) -> bytes:
    """One binary microphone frame (client → server): ``MIC_MAGIC``, then its PCM."""
    return MIC_MAGIC + pcm


def split_audio_frame(frame: bytes) -> tuple[int, bytes]:
    """A binary audio frame's segment ``seq`` and its PCM."""
    (seq,) = AUDIO_HEADER.unpack_from(frame)
    return seq, frame[AUDIO_HEADER.size :]


def page_module() -> str:
    """``PAGE_CONSTANTS`` as an ES module, so the page does not write them again."""
    return "".join(
        f"export const {name} = {json.dumps(value)};\n" for name, value in PAGE_CONSTANTS.items()
    )
