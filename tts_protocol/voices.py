"""OpenAI's voice names (``alloy``, ``nova``, ...) as the voices a server has: the one mapping
every door uses (the TTS server's ``/v1``, the agent's ``POST /invocations`` and ``/ws``).

A name the server has is itself; an OpenAI name it lacks is the voice it stands for: the
server's ``xx_<name>`` (``af_alloy``), else the nearest of the same gender
(``nearest_voice``). Pure: the voices are the server's ``ready.voices``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tts_protocol.validation import VoiceMix

# OpenAI's voices by gender: as Kokoro's packs of the same name have it (af_alloy, am_echo,
# bm_fable, ...), else as OpenAI's voice is heard.
OPENAI_VOICE_GENDERS = {
    "alloy": "f",
    "ash": "m",
    "ballad": "m",
    "cedar": "m",
    "coral": "f",
    "echo": "m",
    "fable": "m",
    "marin": "f",
    "nova": "f",
    "onyx": "m",
    "sage": "f",
    "shimmer": "f",
    "verse": "m",
}
OPENAI_VOICES = tuple(OPENAI_VOICE_GENDERS)
# A Kokoro voice name says its language and gender: "af_heart" is American English, female.
_KOKORO_NAME = re.compile(r"([a-z])([fm])_")
_ENGLISH = ("a", "b")  # American, then British


def nearest_voice(voices: Sequence[str], default: str, gender: str) -> str:
    """The voice nearest to one of ``gender``: the same gender first, then English (American,
    then British), then the default voice, then by name."""

    def rank(voice: str) -> tuple[bool, int, bool, str]:
        kokoro = _KOKORO_NAME.match(voice)
        language, sex = kokoro.groups() if kokoro else ("", "")
        english = _ENGLISH.index(language) if language in _ENGLISH else len(_ENGLISH)
        return sex != gender, english, voice != default, voice

    return min(voices, key=rank)


def openai_voice(name: str, voices: Sequence[str], default: str) -> str:
    """The voice OpenAI's ``name`` stands for: ``alloy`` → ``af_alloy`` where ``voices`` has
    it, else the nearest voice of the same gender (``onyx`` → ``am_adam``, or ``jm_kumo``)."""
    named = [voice for voice in voices if voice.split("_", 1)[-1] == name]
    return nearest_voice(named or voices, default, OPENAI_VOICE_GENDERS[name])


def openai_voice_map(voices: Sequence[str], default: str) -> dict[str, str]:
    """Each of OpenAI's voice names, as the voice it stands for (``openai_voice``)."""
    return {name: openai_voice(name, voices, default) for name in OPENAI_VOICES}


def resolve_voice(mix: VoiceMix, voices: Sequence[str], default: str) -> VoiceMix:
    """``mix`` with each OpenAI name that ``voices`` lacks as the voice it stands for; any
    other name is left for the server to judge. Two names that become one voice add up."""
    shares: dict[str, float] = {}
    for name, share in mix:
        if name in OPENAI_VOICE_GENDERS and name not in voices and voices:
            name = openai_voice(name, voices, default)
        shares[name] = shares.get(name, 0.0) + share
    return tuple(sorted(shares.items()))
