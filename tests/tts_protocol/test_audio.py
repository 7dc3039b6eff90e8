"""Audio helpers: framing on sample boundaries, WAV files, durations."""

from __future__ import annotations

import io
import wave

from tts_protocol import (
    MAX_AUDIO_FRAME_BYTES,
    SAMPLE_RATE,
    pcm16_to_float,
    samples_ms,
    split_audio,
    wav_bytes,
)


def test_split_audio_keeps_frames_small_and_on_sample_boundaries() -> None:
    pcm = bytes(range(256)) * 300  # 76 800 bytes
    frames = split_audio(pcm)
    assert b"".join(frames) == pcm
    assert all(len(f) <= MAX_AUDIO_FRAME_BYTES and len(f) % 2 == 0 for f in frames)
    assert [len(f) for f in split_audio(b"\x00" * 10, max_frame_bytes=5)] == [4, 4, 2]
    assert split_audio(b"") == []


def test_wav_bytes_is_a_mono_16_bit_file_holding_the_pcm() -> None:
    pcm = bytes(range(200))
    with wave.open(io.BytesIO(wav_bytes(pcm)), "rb") as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, SAMPLE_RATE)
        assert wav.readframes(wav.getnframes()) == pcm
    with wave.open(io.BytesIO(wav_bytes(b"", sample_rate=16_000)), "rb") as wav:
        assert (wav.getframerate(), wav.getnframes()) == (16_000, 0)


def test_samples_ms() -> None:
    assert samples_ms(SAMPLE_RATE) == 1000.0
    assert samples_ms(36) == 1.5
    assert samples_ms(1) == 0.0  # to a tenth of a millisecond, as the wire reports it
    assert samples_ms(160, sample_rate=16_000) == 10.0


def test_pcm16_to_float_reads_s16le_into_minus_one_to_one() -> None:
    import numpy as np

    pcm = np.array([-32768, -16384, 0, 16384, 32767], dtype="<i2").tobytes()
    samples = pcm16_to_float(pcm)
    assert samples.dtype == np.float32
    assert samples.tolist() == [-1.0, -0.5, 0.0, 0.5, 32767 / 32768]
