"""One synthesis, checked once: ``Engine.prepare`` makes a ``Prepared`` or raises a ``Refusal``.

A route hands the engine a text, a parsed voice (``VoiceMix``; None: the default voice), a
speed and the normalizer's switches. ``prepare`` checks what only the engine knows (the voice is
one it has, a blend mixes, the text is speakable) and either refuses, with a machine-readable
code, or returns the synthesis as it will run. Each route only renders a refusal into its own
shape (a protocol ``error``, an ``/invocations`` body, OpenAI's error); ``synthesize`` takes the
``Prepared`` and checks nothing again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import ClassVar

from tts_protocol import ErrorCode
from tts_protocol.validation import VoiceMix, voice_name
from tts_server.normalize import Normalized, Options, normalize

NORMALIZED = Options()  # every reading on: the default of every route


class Refusal(ValueError):
    """A synthesis the engine refuses: ``code`` says why, ``field`` which input is at fault, and
    ``status`` is the HTTP status both HTTP routes answer it with."""

    code: ClassVar[ErrorCode]
    field: ClassVar[str]
    status: ClassVar[int]

    @property
    def message(self) -> str:
        """What the client is told."""
        return str(self)


class UnknownVoice(Refusal):
    """The requested voice is not one the engine has (or its blend does not mix)."""

    code = ErrorCode.UNKNOWN_VOICE
    field = "voice"
    status = 400


class UnsupportedText(Refusal):
    """The text has letters the English G2P cannot speak: it would read them out by name."""

    code = ErrorCode.UNSUPPORTED_TEXT
    field = "text"
    status = 422


@dataclass(frozen=True)
class Prepared:
    """A checked synthesis: speakable ``text`` in ``voice`` (a mix the engine has; one voice is
    a mix of one) at ``speed``, read with ``normalization``'s switches (None: as written)."""

    text: str
    voice: VoiceMix
    speed: float = 1.0
    normalization: Options | None = NORMALIZED

    @property
    def voice_name(self) -> str:
        """The voice's canonical name (``af_heart``, ``a(0.7)+b(0.3)``)."""
        return voice_name(self.voice)

    @cached_property
    def spoken(self) -> Normalized:
        """The text as it will be read (normalized when first asked for, by ``synthesize``)."""
        if self.normalization is None:
            return Normalized(self.text, self.text)
        return normalize(self.text, self.normalization)

    def part(self, text: str) -> Prepared:
        """A part of the checked text (a sentence), spoken the same way: not checked again."""
        return replace(self, text=text)
