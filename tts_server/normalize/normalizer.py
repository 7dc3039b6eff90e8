"""``normalize(text)``: the words a voice says for ``text``, and where each came from.

The text is read token by token (whitespace-separated); at each token the rules are tried in
order and the first that matches replaces its span of the text with words. Everything else
is copied as written, so text that needs nothing comes back unchanged. A token with no digit,
symbol or known abbreviation skips the rules, which keeps ordinary prose cheap; every rule
reads a bounded number of tokens with linear regular expressions, so no input is slow.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

from tts_server.normalize import clock, quantities, web, words
from tts_server.normalize.context import Context, Match, Options

Rule = Callable[[Context, int], Match | None]
# For a token with a digit in it; one without tries only the rules that read words.
NUMBER_RULES: tuple[Rule, ...] = (
    web.email,
    web.url,
    web.phone,
    clock.time,
    clock.numeric_date,
    clock.named_date,
    quantities.dimensions,
    quantities.fractions,
    quantities.version,
    quantities.quantity,
    words.roman,
    words.abbreviation,
    words.symbol,
    words.optional_plural,
    quantities.mixed,
)
WORD_RULES: tuple[Rule, ...] = (
    web.email,
    web.url,
    clock.named_date,
    words.roman,
    words.abbreviation,
    words.symbol,
    words.optional_plural,
)
_DIGIT = re.compile(r"[0-9]")
# A digit, a symbol, a dot inside a word ("example.com") or an optional plural ("friend(s").
_TRIGGER = re.compile(r"[0-9$€£¥&#+%@°=~×÷→≈<>/]|[A-Za-z]\.[A-Za-z]|\(s\Z")  # noqa: RUF001
_WORD_KEYS = words.KEYS | frozenset(clock.MONTH_NAMES)


@dataclass(frozen=True, slots=True)
class Replacement:
    """``written[written_start:written_end]`` is said as ``text[spoken_start:spoken_end]``."""

    written_start: int
    written_end: int
    spoken_start: int
    spoken_end: int


@dataclass(frozen=True, slots=True)
class Normalized:
    """The spoken ``text`` of ``written``, and the replacements that made it (in order)."""

    written: str
    text: str
    replacements: tuple[Replacement, ...] = ()

    def written_span(self, start: int, end: int) -> tuple[int, int, int | None]:
        """The span of ``written`` that ``text[start:end]`` says, and the index of the
        replacement it is part of (None where it is copied as written)."""
        reps = self.replacements
        ends = [r.spoken_end for r in reps]
        growth = (r.spoken_end - r.spoken_start - (r.written_end - r.written_start) for r in reps)
        shifts = [0, *accumulate(growth)]
        first = bisect_right(ends, start)
        if first < len(reps) and reps[first].spoken_start < end:
            last = first
            while last + 1 < len(reps) and reps[last + 1].spoken_start < end:
                last += 1
            written_start = min(reps[first].written_start, start - shifts[first])
            written_end = max(reps[last].written_end, end - shifts[last + 1])
            return written_start, written_end, first
        return start - shifts[first], end - shifts[first], None


def _needs_rules(core: str) -> bool:
    """Whether any rule could read ``core``: most words of prose cannot."""
    if _TRIGGER.search(core) is not None or core.lower() in _WORD_KEYS:
        return True
    return core.isupper() and set(core) <= words.ROMAN_LETTERS


def normalize(text: str, options: Options | None = None) -> Normalized:
    """``text`` as it is said: numbers, money, times, dates, units, addresses, symbols,
    Roman numerals and abbreviations in words; the rest copied as written."""
    ctx = Context(text, options or Options())
    tokens = ctx.tokens
    out: list[str] = []
    replacements: list[Replacement] = []
    written_at = spoken_at = 0
    i = 0
    while i < len(tokens):
        core = ctx.core(i)
        match = None
        if core and _needs_rules(core):
            rules = NUMBER_RULES if _DIGIT.search(core) else WORD_RULES
            match = next((m for rule in rules if (m := rule(ctx, i)) is not None), None)
        if match is None or match.start < written_at:
            i += 1
            continue
        if match.spoken == text[match.start : match.end]:  # read as written: no replacement
            while i < len(tokens) and tokens[i].core_start < match.end:
                i += 1
            continue
        copied = text[written_at : match.start]
        out.append(copied)
        spoken_at += len(copied)
        replacements.append(
            Replacement(match.start, match.end, spoken_at, spoken_at + len(match.spoken))
        )
        out.append(match.spoken)
        spoken_at += len(match.spoken)
        written_at = match.end
        while i < len(tokens) and tokens[i].core_start < written_at:
            i += 1
    if not replacements:
        return Normalized(text, text)
    out.append(text[written_at:])
    return Normalized(text, "".join(out), tuple(replacements))
