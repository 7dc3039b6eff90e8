"""Streaming audio encoders for the speech API: 24 kHz PCM in, container bytes out as made.

Each response gets one ``StreamingEncoder``: PyAV (FFmpeg, bundled in its wheels) encodes and
muxes into a sink that is not seekable, so every container is written the way a live stream
is. The muxer flushes after each packet, so bytes leave as soon as the codec makes them: the
codec's own delay (an mp3 or AAC frame, an Opus frame and its look-ahead) is all that is held.

| format | container, codec | rate |
|---|---|---|
| ``mp3`` | MPEG audio, LAME, 64 kb/s | 24 kHz |
| ``opus`` | Ogg, libopus, 32 kb/s, a page per 100 ms | 48 kHz (FFmpeg's resampler) |
| ``aac`` | ADTS, FFmpeg's AAC, 64 kb/s | 24 kHz |
| ``flac`` | native FLAC (no total length in STREAMINFO) | 24 kHz |
| ``wav`` | RIFF, s16le, sizes 0xFFFFFFFF (length unknown) | 24 kHz |
| ``pcm`` | none: raw s16le mono | 24 kHz |
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from tts_protocol import SAMPLE_RATE


class AudioFormat(StrEnum):
    """The ``response_format`` values of OpenAI's speech API."""

    MP3 = "mp3"
    OPUS = "opus"
    AAC = "aac"
    FLAC = "flac"
    WAV = "wav"
    PCM = "pcm"


@dataclass(frozen=True, slots=True)
class Encoding:
    """How one format is made: FFmpeg muxer and encoder, output rate, bit rate, media type."""

    container: str
    codec: str
    media_type: str
    sample_rate: int = SAMPLE_RATE
    bit_rate: int | None = None
    muxer_options: Mapping[str, str] = field(default_factory=dict)


ENCODINGS: Mapping[AudioFormat, Encoding] = {
    AudioFormat.MP3: Encoding("mp3", "libmp3lame", "audio/mpeg", bit_rate=64_000),
    AudioFormat.OPUS: Encoding(
        "ogg",
        "libopus",
        "audio/ogg",
        sample_rate=48_000,
        bit_rate=32_000,
        muxer_options={"page_duration": "100000"},  # µs; the default (1 s) holds audio back
    ),
    AudioFormat.AAC: Encoding("adts", "aac", "audio/aac", bit_rate=64_000),
    AudioFormat.FLAC: Encoding("flac", "flac", "audio/flac"),
    AudioFormat.WAV: Encoding("wav", "pcm_s16le", "audio/wav"),
    AudioFormat.PCM: Encoding("s16le", "pcm_s16le", "audio/pcm"),
}


class _Sink:
    """A write-only, non-seekable file for PyAV: it collects what the muxer writes."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def write(self, data: bytes) -> int:
        self._buffer += data
        return len(data)

    def take(self) -> bytes:
        """Everything written since the last ``take``."""
        data = bytes(self._buffer)
        self._buffer.clear()
        return data


class StreamingEncoder:
    """One response's encoder: ``encode`` PCM chunks, then ``finish``.

    Input is PCM s16le mono at 24 kHz (the engine's output as the protocol sends it). Each call
    returns the container bytes produced so far, possibly none. Calls may come from worker
    threads: a lock keeps them one at a time, so ``close`` waits for an ``encode`` in flight.
    """

    def __init__(self, audio_format: AudioFormat) -> None:
        self.encoding = ENCODINGS[audio_format]
        import av  # here, not at import: a server without the speech API's codecs still loads

        self._sink = _Sink()
        self._container = av.open(
            self._sink,
            "w",
            format=self.encoding.container,
            container_options={
                "flush_packets": "1",  # hand each packet to the sink at once
                "fflags": "+bitexact",  # no encoder-version tags (a bare 44-byte WAV header)
                **self.encoding.muxer_options,
            },
        )
        self._stream = self._container.add_stream(
            self.encoding.codec, rate=self.encoding.sample_rate, layout="mono"
        )
        if self.encoding.bit_rate:
            self._stream.bit_rate = self.encoding.bit_rate
        self._container.start_encoding()  # the header now: even an empty response is a file
        self._samples = 0
        self._closed = False
        self._lock = threading.Lock()

    @property
    def media_type(self) -> str:
        """The response's ``Content-Type``."""
        return self.encoding.media_type

    def encode(self, pcm: bytes) -> bytes:
        """Feed one chunk of PCM; return the bytes the container has ready."""
        import av

        samples = np.frombuffer(pcm, dtype="<i2").reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = SAMPLE_RATE
        with self._lock:
            self._check_open()
            frame.pts = self._samples
            self._samples += samples.shape[1]
            self._container.mux(self._stream.encode(frame))
            return self._sink.take()

    def finish(self) -> bytes:
        """Drain the codec and write the trailer; return the last bytes."""
        with self._lock:
            self._check_open()
            self._container.mux(self._stream.encode(None))
            self._close()
            return self._sink.take()

    def close(self) -> None:
        """Release FFmpeg's state (idempotent): when a response is dropped before ``finish``."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            self._container.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("the encoder is closed")
