"""Voices that are not ours: eSpeak NG, as the ``espeakng-loader`` wheel ships it.

    from bench.speech.espeak_voice import say
    pcm = say("What time is it?", "en-gb-x-rp+m3")  # 16 kHz s16le mono

The wheel holds ``libespeak-ng.so`` and its ``espeak-ng-data``; this module drives the library
through ``ctypes`` (synchronous, samples handed to a callback, nothing played), so no
``espeak-ng`` program is needed. A voice is a language (``en-us``, ``en-gb``,
``en-gb-x-rp``, ``en-gb-scotland``, ``en-029``...) with an optional ``+variant`` from
``espeak-ng-data/voices/!v`` (``f3``, ``m3``, ``klatt``...): a formant synthesizer, so its
voice is far from the project's neural one. Its audio (22 050 Hz) is resampled to 16 kHz as
the page's microphone sends it. The library keeps one voice for the whole process, so calls
are serialized. Its random parts are seeded, but its pitch flutter runs on from one utterance
to the next: the same calls in the same order give the same audio, and a text said after
others may differ from it said first by a few samples.
"""

from __future__ import annotations

import ctypes
import threading
from functools import cache
from pathlib import Path

import numpy as np

from bench.speech.intelligibility import WHISPER_RATE, to_whisper_input

# A spread of accents, sexes and synthesizers (each variant is checked to exist by ``voices``)
VOICES = (
    "en-us",
    "en-gb",
    "en-us+f3",
    "en-gb-x-rp+m3",
    "en-us+klatt",
    "en-gb-scotland+f2",
    "en-029+m1",
)
SEED = 1  # eSpeak NG varies its output at random; a fixed seed makes a text's audio repeat
DEFAULT_RATE = 160  # words per minute: a little slower than espeak's 175, as a person asks

_OUTPUT_SYNCHRONOUS = 2  # espeak_AUDIO_OUTPUT: samples to the callback, Synth returns when done
_CHARS_UTF8 = 1
_POS_CHARACTER = 1
_RATE, _PITCH = 1, 3  # espeak_PARAMETER
_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


class EspeakUnavailable(RuntimeError):
    """The eSpeak NG library or its data is missing, or a voice is unknown."""


class _Espeak:
    """The process's one eSpeak NG: initialized once, one synthesis at a time."""

    def __init__(self) -> None:
        try:
            import espeakng_loader

            library = Path(espeakng_loader.get_library_path())
            data = Path(espeakng_loader.get_data_path())
        except (ImportError, RuntimeError) as exc:
            raise EspeakUnavailable(
                f"eSpeak NG is not installed ({exc}); run: pip install espeakng-loader"
            ) from exc
        try:
            self._lib = ctypes.CDLL(str(library))
        except OSError as exc:
            raise EspeakUnavailable(f"{library} did not load: {exc}") from exc
        self.data = data
        lib = self._lib
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_SetSynthCallback.argtypes = [_CALLBACK]
        lib.espeak_Synth.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        self.sample_rate = lib.espeak_Initialize(_OUTPUT_SYNCHRONOUS, 0, str(data).encode(), 0)
        if self.sample_rate <= 0:
            raise EspeakUnavailable(f"espeak_Initialize failed with the data at {data}")
        self._chunks: list[np.ndarray] = []
        self._callback = _CALLBACK(self._collect)  # kept: the library holds only the pointer
        lib.espeak_SetSynthCallback(self._callback)
        self._seed = getattr(lib, "espeak_ng_SetRandSeed", None)  # 1.52 on: the same audio
        if self._seed is not None:
            self._seed.argtypes = [ctypes.c_long]
        self._lock = threading.Lock()

    def _collect(self, wav: ctypes._Pointer, count: int, _events: int) -> int:
        if wav and count > 0:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        return 0  # go on

    def synthesize(self, text: str, voice: str, rate: int, pitch: int | None) -> np.ndarray:
        """``text`` in ``voice``: int16 samples at ``sample_rate``."""
        with self._lock:
            if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise EspeakUnavailable(f"eSpeak NG has no voice {voice!r}")
            self._lib.espeak_SetParameter(_RATE, rate, 0)
            if pitch is not None:
                self._lib.espeak_SetParameter(_PITCH, pitch, 0)
            if self._seed is not None:
                self._seed(SEED)
            self._chunks = []
            encoded = text.encode() + b"\0"
            status = self._lib.espeak_Synth(
                encoded, len(encoded), 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
            self._lib.espeak_Synchronize()
            chunks, self._chunks = self._chunks, []
        if status != 0:
            raise EspeakUnavailable(f"espeak_Synth failed ({status}) for {text!r}")
        return np.concatenate(chunks) if chunks else np.zeros(0, np.int16)


@cache
def _espeak() -> _Espeak:
    return _Espeak()


@cache
def _languages() -> dict[str, str]:
    """Each language code to the voice file that speaks it first (``en-gb``: ``gmw/en``)."""
    root = _espeak().data / "lang"
    best: dict[str, tuple[int, str]] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        identifier = path.relative_to(root).as_posix()
        for line in path.read_text(errors="replace").splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] == "language":
                priority = int(words[2]) if len(words) > 2 and words[2].isdigit() else 5
                if (priority, identifier) < best.get(words[1].lower(), (99, "")):
                    best[words[1].lower()] = (priority, identifier)
    return {code: identifier for code, (_, identifier) in best.items()}


def voices() -> tuple[str, ...]:
    """The variants eSpeak NG offers (``+name`` after a language)."""
    return tuple(sorted(p.name for p in (_espeak().data / "voices" / "!v").iterdir()))


def say(
    text: str, voice: str = "en-us", rate: int | None = None, pitch: int | None = None
) -> bytes:
    """``text`` said by eSpeak NG in ``voice`` (``language[+variant]``): 16 kHz s16le mono.

    ``rate`` is in words per minute (default ``DEFAULT_RATE``); ``pitch`` 0-100 (default: the
    voice's own). Raises ``EspeakUnavailable`` if the library or the voice is missing.
    """
    engine = _espeak()
    language, plus, variant = voice.partition("+")
    if plus and variant not in voices():
        raise EspeakUnavailable(f"eSpeak NG has no variant {variant!r} (see voices())")
    name = _languages().get(language.lower(), language) + plus + variant
    samples = engine.synthesize(text, name, rate or DEFAULT_RATE, pitch)
    if not samples.size:
        raise EspeakUnavailable(f"eSpeak NG said nothing for {text!r} in {voice!r}")
    audio = to_whisper_input(samples, engine.sample_rate)
    return (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()


__all__ = ["DEFAULT_RATE", "VOICES", "WHISPER_RATE", "EspeakUnavailable", "say", "voices"]
