"""Protocol v1's fixed numbers and names: audio format, limits and the server's paths."""

from __future__ import annotations

PROTOCOL_VERSION = 1

# Audio: raw PCM, signed 16-bit little-endian, mono, in binary frames.
SAMPLE_RATE = 24_000
AUDIO_FORMAT = "pcm_s16le"
CHANNELS = 1
BYTES_PER_SAMPLE = 2
MAX_AUDIO_FRAME_BYTES = 32 * 1024
# How far ahead of its audio clock a listener's player starts a reply's first chunk (then plays
# the rest back to back). The server sizes each decoder window to be ready before what it has
# sent, this lead included, has played (tts_server/engines/windows.py); the page's player starts
# with it (agent/web/player.js).
PLAYER_LEAD_S = 0.1

# Limits of a `speak`.
MIN_SPEED = 0.5
MAX_SPEED = 2.0
DEFAULT_SPEED = 1.0  # a `speak` without `speed`
DEFAULT_MAX_TEXT_CHARS = 2_000
MAX_ID_CHARS = 128

# Where the server listens. SageMaker routes a bidirectional stream to STREAM_PATH; WS_PATH is
# the short alias for local use. PING_PATH answers 200 only after a real synthesis.
STREAM_PATH = "/invocations-bidirectional-stream"
WS_PATH = "/ws"
WS_PATHS = (STREAM_PATH, WS_PATH)
PING_PATH = "/ping"
READINESS_POLL = f"{PING_PATH}?poll=readiness"  # /ping as a start-up poll asks: not logged
