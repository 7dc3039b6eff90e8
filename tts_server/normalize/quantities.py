"""Numbers with what they count: money, percentages, units, multipliers, scales (k, M, B),
ordinals, decades, years, ranges, fractions and negatives, and a number inside a word.

A token's quantity is read by one regular expression with no nested repetition (linear in
the token); a range is two quantities around a dash, each read the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tts_server.normalize.context import Context, Match, table
from tts_server.normalize.numbers import (
    MAX_CARDINAL_DIGITS,
    cardinal,
    clock_words,
    fraction,
    integer,
    number,
    ordinal,
    plural,
    year,
)
from tts_server.normalize.units import SPACED, UNITS

_QUANTITY = re.compile(
    r"(?P<sign>[-−+~≈])?(?P<currency>[$€£¥])?"  # noqa: RUF001 - the minus sign on purpose
    r"(?P<number>[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
    r"(?P<scale>(?:[kKMB]|bn|mn)(?![A-Za-z]))?"
    r"(?P<suffix>%|°[CF]?|['’]s|[A-Za-zµ]+(?:/[A-Za-z]+)?)?"  # noqa: RUF001
)
_FRACTION = re.compile(r"([0-9]{1,3})/([0-9]{1,3})")
_MIXED = re.compile(r"[0-9]+|[^\W\d_]+")  # the runs of a word with digits in it: "MP3"
_VERSION = re.compile(r"v?[0-9]+(?:\.[0-9]+){2,}")
SIGNS = {"-": "minus", "−": "minus", "+": "plus", "~": "about", "≈": "about"}  # noqa: RUF001
SCALES = {"k": "thousand", "K": "thousand", "M": "million", "mn": "million", "B": "billion"}
SCALES["bn"] = "billion"
SCALE_WORDS = frozenset({"thousand", "million", "billion", "trillion"})
CURRENCIES = {  # symbol → (one, many, one hundredth, many hundredths)
    "$": ("dollar", "dollars", "cent", "cents"),
    "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "¥": ("yen", "yen", "sen", "sen"),
}
ORDINAL_SUFFIXES = frozenset({"st", "nd", "rd", "th"})
AM_PM = {"am": "AM", "a.m": "AM", "pm": "PM", "p.m": "PM"}
# Before a four-digit number, these say it is a year ("in 1999"); so do a capital or a
# closing mark after it ("1999 Ford", "1999.").
YEAR_BEFORE = table(
    "in since by from until till to of year around circa before after during early late mid "
    "between and or the 's spring summer autumn fall winter"
)
YEAR_AFTER = table("AD BC BCE CE was is will saw had has")


@dataclass(frozen=True, slots=True)
class Quantity:
    """One written quantity: ``-$1.5M``, ``72°F``, ``10x``, ``3rd``, ``1990s``."""

    sign: str
    currency: str
    number: str
    scale: str
    suffix: str

    @property
    def is_one(self) -> bool:
        """Exactly one of what it counts: singular units and currencies."""
        return self.number == "1" and not self.scale

    @property
    def is_integer(self) -> bool:
        """A whole number without commas, decimals or scale, short enough to be an amount."""
        return self.number.isdigit() and len(self.number) <= MAX_CARDINAL_DIGITS and not self.scale


def parse(core: str, start: int = 0) -> tuple[Quantity, int] | None:
    """The quantity at ``core[start:]`` and where it ends, or None."""
    found = _QUANTITY.match(core, start)
    if found is None:
        return None
    sign, currency, value, scale, suffix = found.groups(default="")
    return Quantity(sign, currency, value, scale, suffix), found.end()


def _money(value: str, scale: str, symbol: str) -> str:
    """ "five dollars and ninety-nine cents", "one point two million dollars"."""
    one, many, cent, cents = CURRENCIES[symbol]
    whole, _, hundredths = value.replace(",", "").partition(".")
    if scale or (hundredths and len(hundredths) != 2):
        return f"{number(value)}{' ' + scale if scale else ''} {many}"
    amount = f"{integer(whole or '0')} {one if whole == '1' else many}"
    if not hundredths or hundredths == "00":
        return amount
    change = f"{cardinal(int(hundredths))} {cent if hundredths == '01' else cents}"
    return change if whole in ("", "0") else f"{amount} and {change}"


def _unit(symbol: str) -> tuple[str, str] | None:
    """A unit's words by its written symbol, exactly, else by a common case slip ("Km")."""
    return UNITS.get(symbol) or UNITS.get(symbol.lower())


def say(q: Quantity, *, currency: str = "", unit: str = "") -> str:
    """The words of ``q``; ``currency`` or ``unit`` come from elsewhere (a range's other
    end, the next word) when ``q`` itself has none."""
    scale = SCALES.get(q.scale, "")
    symbol = q.currency or currency
    sign = SIGNS[q.sign] + " " if q.sign else ""
    if symbol:
        return sign + _money(q.number, scale, symbol)
    words = number(q.number) + (" " + scale if scale else "")
    suffix = q.suffix or unit
    if not suffix:
        return sign + words
    lower = suffix.lower()
    if suffix == "%":
        return f"{sign}{words} percent"
    if lower == "x":
        return f"{sign}{words} times"
    if q.is_integer and lower in ORDINAL_SUFFIXES:
        return sign + ordinal(int(q.number))
    if q.is_integer and lower in ("s", "'s", "’s"):  # noqa: RUF001
        decade = year(int(q.number)) if len(q.number) == 4 else cardinal(int(q.number))
        return sign + plural(decade)
    if lower in AM_PM:  # "5pm", and "10.30am" as British English writes a time
        hour, _, minute = q.number.partition(".")
        if hour.isdigit() and 1 <= int(hour) <= 12 and len(minute) in (0, 2):
            return sign + clock_words(int(hour), int(minute or 0), None, AM_PM[lower])
        return f"{sign}{words} {AM_PM[lower]}"  # "13pm" is no time: its letters, not "-pm"
    words_of = _unit(suffix)
    if words_of is not None:
        return f"{sign}{words} {words_of[0] if q.is_one else words_of[1]}"
    return f"{sign}{words}-{suffix}"  # "3D" → "three-D", one word (see ``mixed``)


def _year_context(ctx: Context, i: int) -> bool:
    """Whether the four-digit number at token ``i`` reads as a year."""
    before = ctx.core(i - 1).lower()
    if i == 0 or before in YEAR_BEFORE or ctx.trail(i - 1):
        return True
    after = ctx.core(i + 1)
    return bool(ctx.trail(i)) or not after or after in YEAR_AFTER or ctx.capitalized(i + 1)


def _is_year(q: Quantity) -> bool:
    return (
        q.is_integer and not (q.sign or q.currency or q.suffix) and len(q.number) == 4
    ) and 1100 <= int(q.number) <= 2099


def _next_words(ctx: Context, i: int, q: Quantity) -> tuple[str, int]:
    """What the word after a bare quantity adds: a unit, a scale word after money, AM/PM
    after an hour; with the index of the last token read."""
    after = ctx.core(i + 1)
    if not ctx.joined(i, i + 1) or q.suffix:
        return "", i
    if q.currency and after in SCALE_WORDS and not q.scale:
        return after, i + 1
    if not q.currency and ctx.options.units and after in SPACED:
        return after, i + 1
    if q.is_integer and not q.currency and after.lower() in AM_PM and 1 <= int(q.number) <= 12:
        return after, i + 1
    return "", i


def quantity(ctx: Context, i: int) -> Match | None:
    """A number, alone or with its currency, unit, scale or suffix; a range of them."""
    core = ctx.core(i)
    parsed = parse(core)
    if parsed is None:
        return None
    q, end = parsed
    if q.suffix and _unit(q.suffix) is not None and not ctx.options.units:
        return None
    if end == len(core):
        return _single(ctx, i, q)
    rest = core[end]
    second = parse(core, end + 1)
    if second is None or second[1] != len(core) or second[0].sign:
        return None
    other = second[0]
    if rest in "-–" and not q.sign:  # noqa: RUF001 - the en dash on purpose
        return _range(ctx, i, q, other)
    return None


def dimensions(ctx: Context, i: int) -> Match | None:
    """``1920x1080`` → "nineteen twenty by ten eighty"."""
    core = ctx.core(i)
    left, sep, right = core.partition("x")
    if not (sep and left.isdigit() and right.isdigit()):
        return None
    return ctx.replace(i, i, f"{integer(left)} by {integer(right)}")


def _single(ctx: Context, i: int, q: Quantity) -> Match:
    if _is_year(q) and _year_context(ctx, i):
        return ctx.replace(i, i, year(int(q.number)))
    extra, last = _next_words(ctx, i, q)
    if extra in SCALE_WORDS:  # "$5 million" → "five million dollars"
        sign = SIGNS[q.sign] + " " if q.sign else ""
        many = CURRENCIES[q.currency][1]
        return ctx.replace(i, last, f"{sign}{number(q.number)} {extra} {many}")
    if extra.lower() in AM_PM:
        spoken = say(q, unit=extra.lower())
        dotted = ctx.core(last).lower().endswith(".m")  # "p.m.": its last period is its own
        return ctx.replace(i, last, spoken, period=dotted, ends=ctx.sentence_ends_after(last))
    if extra:
        return ctx.replace(i, last, say(q, unit=extra))
    mixed = _fraction_after(ctx, i, q)
    if mixed is not None:
        return mixed
    return ctx.replace(i, i, say(q))


def _fraction_after(ctx: Context, i: int, q: Quantity) -> Match | None:
    """``1 1/2`` → "one and one half", ``-2 1/2`` → "minus two and one half", ``$2 1/2`` →
    "two and one half dollars"."""
    if not (q.is_integer and not q.suffix and ctx.joined(i, i + 1)):
        return None
    found = _FRACTION.fullmatch(ctx.core(i + 1))
    if found is None or int(found[1]) >= int(found[2]):
        return None
    sign = SIGNS[q.sign] + " " if q.sign else ""
    many = " " + CURRENCIES[q.currency][1] if q.currency else ""
    spoken = f"{integer(q.number)} and {fraction(int(found[1]), int(found[2]))}"
    return ctx.replace(i, i + 1, sign + spoken + many)


def _range(ctx: Context, i: int, low: Quantity, high: Quantity) -> Match:
    """``3-5`` → "three to five", ``$5-10`` → "five to ten dollars", ``2020-2024`` in years."""
    if _is_year(low) and (_is_year(high) or (high.is_integer and len(high.number) == 2)):
        # "1990-95": the decade as written; "2005-08": not "oh eight" but the whole year
        century = int(low.number) // 100 * 100
        full = int(high.number) + (0 if len(high.number) == 4 else century)
        short = len(high.number) == 2 and high.number[0] != "0"
        high_words = integer(high.number) if short else year(full)
        return ctx.replace(i, i, f"{year(int(low.number))} to {high_words}")
    unit, last = ("", i) if high.suffix else _next_words(ctx, i, high)
    # "$5-10" and "5-10 km": the currency or unit of one end is said once, after the other.
    shared = not low.suffix and not (low.currency and high.currency)
    left = number(low.number) + (" " + SCALES[low.scale] if low.scale else "")
    if not shared:
        left = say(low)
    right = say(high, currency=high.currency or low.currency, unit=unit)
    return ctx.replace(i, last, f"{left} to {right}")


def fractions(ctx: Context, i: int) -> Match | None:
    """``3/4`` → "three quarters", ``24/7`` → "twenty-four seven", else "N over M"."""
    found = _FRACTION.fullmatch(ctx.core(i))
    if found is None:
        return None
    top, bottom = int(found[1]), int(found[2])
    if (top, bottom) == (24, 7):
        return ctx.replace(i, i, "twenty-four seven")
    if bottom == 0:
        return ctx.replace(i, i, f"{integer(found[1])} slash {integer(found[2])}")
    if top < bottom <= 100:
        return ctx.replace(i, i, fraction(top, bottom))
    return ctx.replace(i, i, f"{integer(found[1])} over {integer(found[2])}")


def version(ctx: Context, i: int) -> Match | None:
    """``v1.2.3`` → "version one point two point three"."""
    core = ctx.core(i)
    if _VERSION.fullmatch(core) is None:
        return None
    parts = core.removeprefix("v").split(".")
    words = " point ".join(integer(part) for part in parts)
    said = core.startswith("v") and ctx.core(i - 1).lower() != "version"
    return ctx.replace(i, i, f"version {words}" if said else words)


def counted(word: str) -> str | None:
    """``word``, a whole number with an ordinal, plural or clock suffix, as it is read alone
    ("1st" → "first", "5s" → "fives", "1990s" → "nineteen nineties", "3pm" → "three PM");
    None for any other word (an identifier, "007s", is read in ``mixed_words``)."""
    parsed = parse(word) if "1" <= word[:1] <= "9" else None  # no sign, currency, zero first
    if parsed is None or parsed[1] != len(word):
        return None
    q = parsed[0]
    if not q.is_integer or q.suffix.lower() not in ORDINAL_SUFFIXES | {"s"} | AM_PM.keys():
        return None
    return say(q)


def mixed_words(word: str) -> str:
    """``word``'s digit runs as numbers, its letter runs as written, joined by hyphens
    ("MP-three"), so that no letter run stands alone as a word another rule would read ("0Mr"
    is not "zero Mister"); other marks are left out."""
    runs = _MIXED.findall(word)
    return "-".join(integer(run) if "0" <= run[0] <= "9" else run for run in runs)


def mixed(ctx: Context, i: int) -> Match | None:
    """A word with digits in it that nothing else read ("MP3", "COVID-19", "B2B"), in
    ``mixed_words``."""
    core = ctx.core(i)
    if not any("0" <= c <= "9" for c in core):
        return None
    spoken = mixed_words(core)
    return ctx.replace(i, i, spoken) if spoken else None
