"""What every rule reads: the text's tokens, their neighbours, the switches, and a match.

A token is a whitespace-separated run of the text; its *core* is the token without the
opening marks before it (``(`` ``"`` ...) and the closing marks after it (``,`` ``.`` ``)``
...), which stay in the spoken text as written. A rule looks at token ``i`` (and, for
"5 km" or "Dr. Smith", its neighbours) and returns a ``Match``: the span of the text it
replaces and the words that are said for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPENERS = "\"'“‘«([{¿¡"  # noqa: RUF001 - typographic quotes on purpose
CLOSERS = "\"'”’»)]},;:.!?…"  # noqa: RUF001
_TOKEN = re.compile(r"\S+")


def table(words: str) -> frozenset[str]:
    """A lookup table from space-separated words."""
    return frozenset(words.split())


@dataclass(frozen=True, slots=True)
class Options:
    """Which readings are on (all by default); numbers, money, times, dates and
    abbreviations are always read when normalization is on."""

    urls: bool = True  # URLs and bare domains: "example dot com"
    emails: bool = True  # "bob at example dot com"
    phones: bool = True  # digit by digit, in groups
    units: bool = True  # "5 km" → "five kilometers" (units after a number only)
    symbols: bool = True  # &, #, +, @, =, ~ and the like, as words
    plurals: bool = True  # "friend(s)" → "friends"


@dataclass(frozen=True, slots=True)
class Token:
    """``text[start:end]`` is the token, ``text[core_start:core_end]`` its core."""

    start: int
    end: int
    core_start: int
    core_end: int


@dataclass(frozen=True, slots=True)
class Match:
    """``text[start:end]`` (the written span) is said as ``spoken``."""

    start: int
    end: int
    spoken: str


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, each with its core (linear: ``str.strip`` on each token)."""
    tokens = []
    for found in _TOKEN.finditer(text):
        raw = found.group()
        core = raw.lstrip(OPENERS)
        lead = len(raw) - len(core)
        core = core.rstrip(CLOSERS)
        start = found.start()
        tokens.append(Token(start, found.end(), start + lead, start + lead + len(core)))
    return tokens


class Context:
    """The text, its tokens and the switches: what a rule needs to decide at token ``i``."""

    def __init__(self, text: str, options: Options) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.options = options

    def core(self, i: int) -> str:
        """The core of token ``i`` ("" outside the text)."""
        if not 0 <= i < len(self.tokens):
            return ""
        token = self.tokens[i]
        return self.text[token.core_start : token.core_end]

    def lead(self, i: int) -> str:
        """The opening marks of token ``i``."""
        token = self.tokens[i]
        return self.text[token.start : token.core_start]

    def trail(self, i: int) -> str:
        """The closing marks of token ``i``."""
        token = self.tokens[i]
        return self.text[token.core_end : token.end]

    def joined(self, i: int, j: int) -> bool:
        """Tokens ``i`` and ``j = i + 1`` read as one phrase: no closing mark after ``i``, no
        opening mark before ``j``."""
        if not 0 <= i < j < len(self.tokens):
            return False
        first, second = self.tokens[i], self.tokens[j]
        return first.core_end == first.end and second.start == second.core_start

    def capitalized(self, i: int) -> bool:
        """Token ``i``'s core is a capitalized word ("Smith", "O'Neil")."""
        core = self.core(i)
        return core[:1].isupper() and core[:1].isalpha()

    def sentence_ends_after(self, i: int) -> bool:
        """Whether a period after token ``i`` likely ends a sentence too (the text ends, or a
        capitalized word follows): then an expanded abbreviation keeps its period."""
        return i + 1 >= len(self.tokens) or self.capitalized(i + 1)

    def replace(
        self, first: int, last: int, spoken: str, *, period: bool = False, ends: bool = False
    ) -> Match:
        """Tokens ``first..last`` (their cores, from the first's to the last's) said as
        ``spoken``. ``period``: the period after the last core is part of it (an
        abbreviation's) and goes into the span too; ``ends``: that period also ends the
        sentence, so the spoken words end with one."""
        end = self.tokens[last].core_end
        if period and self.text.startswith(".", end):
            end += 1
            spoken += "." if ends else ""
        return Match(self.tokens[first].core_start, end, spoken)
