"""Streaming encoders: every format decodes (through PyAV), while arriving and at the end."""

from __future__ import annotations

import io
import itertools
import struct

import av
import numpy as np
import pytest

from tts_protocol import SAMPLE_RATE
from tts_server.openai_api.audio_encoding import ENCODINGS, AudioFormat, StreamingEncoder

TONE_HZ = 440.0
CONTAINERS = [f for f in AudioFormat if f is not AudioFormat.PCM]


def tone(seconds: float, start: int = 0) -> bytes:
    """A 440 Hz tone at a quarter of full scale, as PCM s16le, continuing from sample ``start``."""
    n = np.arange(start, start + int(seconds * SAMPLE_RATE))
    return (np.sin(2 * np.pi * TONE_HZ * n / SAMPLE_RATE) * 8000).astype("<i2").tobytes()


def decode(data: bytes) -> tuple[np.ndarray, int]:
    """All audio in ``data`` as float mono samples, and the stream's sample rate."""
    with av.open(io.BytesIO(data)) as container:
        rate = container.streams.audio[0].rate
        frames = [f.to_ndarray().astype(np.float32).reshape(-1) for f in container.decode(audio=0)]
    return (np.concatenate(frames) if frames else np.zeros(0, np.float32)), rate


def peak_hz(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.fft.rfftfreq(samples.size, 1 / rate)[np.argmax(spectrum)])


def encode_all(audio_format: AudioFormat, chunks: list[bytes]) -> list[bytes]:
    encoder = StreamingEncoder(audio_format)
    return [*(encoder.encode(chunk) for chunk in chunks), encoder.finish()]


@pytest.mark.parametrize("audio_format", CONTAINERS)
def test_each_container_decodes_to_the_audio_fed_in(audio_format: AudioFormat) -> None:
    parts = encode_all(audio_format, [tone(0.7), tone(0.6, start=16800), tone(0.7, start=31200)])
    samples, rate = decode(b"".join(parts))
    assert rate == ENCODINGS[audio_format].sample_rate
    seconds = samples.size / rate
    assert 2.0 - 0.01 <= seconds <= 2.0 + 0.1  # codec padding only adds a frame or two
    assert peak_hz(samples, rate) == pytest.approx(TONE_HZ, abs=2)


@pytest.mark.parametrize("audio_format", CONTAINERS)
def test_the_bytes_of_the_first_chunk_already_decode(audio_format: AudioFormat) -> None:
    """A client can play what has arrived: the first chunk's bytes are a decodable stream."""
    encoder = StreamingEncoder(audio_format)
    first = encoder.encode(tone(1.0))
    samples, rate = decode(first)
    assert samples.size / rate >= 0.5  # all but the codec's look-ahead and the last page
    encoder.close()


def test_opus_is_resampled_to_48_khz_in_ogg() -> None:
    data = b"".join(encode_all(AudioFormat.OPUS, [tone(1.0)]))
    assert data.startswith(b"OggS") and b"OpusHead" in data[:100]
    samples, rate = decode(data)
    assert rate == 48_000 and peak_hz(samples, rate) == pytest.approx(TONE_HZ, abs=2)


def test_chunks_are_stamped_from_sample_zero_on_so_the_ogg_timeline_starts_at_the_preskip() -> None:
    """The chunks' timestamps count their samples from 0: the first Opus packet then sits at
    minus the encoder's pre-skip (OpusHead), each next one 20 ms (960 ticks at 48 kHz) on."""
    data = b"".join(encode_all(AudioFormat.OPUS, [tone(0.4), tone(0.6, 9600)]))
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        (pre_skip,) = struct.unpack_from("<H", bytes(stream.codec_context.extradata), 10)
        stamps = [packet.pts for packet in container.demux(stream) if packet.pts is not None]
    assert pre_skip > 0
    assert stamps[0] == -pre_skip
    assert all(b - a == 960 for a, b in itertools.pairwise(stamps[:20]))


def test_wav_has_a_44_byte_header_of_unknown_length_and_the_pcm_as_is() -> None:
    pcm = tone(0.5)
    data = b"".join(encode_all(AudioFormat.WAV, [pcm]))
    riff, riff_size, wave_tag = struct.unpack("<4sI4s", data[:12])
    data_tag, data_size = struct.unpack("<4sI", data[36:44])
    assert (riff, wave_tag, data_tag) == (b"RIFF", b"WAVE", b"data")
    assert riff_size == data_size == 0xFFFFFFFF  # streamed: the length is not known up front
    assert struct.unpack("<HHII", data[20:32]) == (1, 1, SAMPLE_RATE, SAMPLE_RATE * 2)
    assert data[44:] == pcm


def test_pcm_is_the_input_bytes_unchanged() -> None:
    chunks = [tone(0.3), tone(0.2, start=7200)]
    assert b"".join(encode_all(AudioFormat.PCM, chunks)) == b"".join(chunks)


@pytest.mark.parametrize(
    ("audio_format", "magic"),
    [(AudioFormat.WAV, b"RIFF"), (AudioFormat.OPUS, b"OggS"), (AudioFormat.FLAC, b"fLaC")],
)
def test_the_header_is_written_even_without_audio(audio_format: AudioFormat, magic: bytes) -> None:
    assert StreamingEncoder(audio_format).finish().startswith(magic)


def test_a_closed_encoder_refuses_more_audio_and_close_is_idempotent() -> None:
    encoder = StreamingEncoder(AudioFormat.MP3)
    encoder.encode(tone(0.1))
    encoder.close()
    encoder.close()
    with pytest.raises(ValueError, match=r"^the encoder is closed$"):
        encoder.encode(tone(0.1))
    with pytest.raises(ValueError, match=r"^the encoder is closed$"):
        encoder.finish()


def test_media_types_name_each_container() -> None:
    assert {f: StreamingEncoder(f).media_type for f in AudioFormat} == {
        AudioFormat.MP3: "audio/mpeg",
        AudioFormat.OPUS: "audio/ogg",
        AudioFormat.AAC: "audio/aac",
        AudioFormat.FLAC: "audio/flac",
        AudioFormat.WAV: "audio/wav",
        AudioFormat.PCM: "audio/pcm",
    }
