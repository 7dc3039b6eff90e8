"""Words that are not said as written: abbreviations by their context, Roman numerals where
the context says they are numbers, symbols, and optional plurals ("friend(s)").

Context decides the ambiguous abbreviations: "St." is Saint before a name and Street after
one ("St. Louis", "Oak St."); "Dr." Doctor or Drive, "Ft." Fort or feet, "No." number only
before a number. An expanded abbreviation keeps its period where the sentence ends there.
"""

from __future__ import annotations

import re

from tts_server.normalize.context import Context, Match, table
from tts_server.normalize.numbers import cardinal, integer, ordinal, plural
from tts_server.normalize.quantities import counted, mixed_words

# Before a capitalized name (the period is read into the name: "Dr. Smith" → "Doctor Smith").
TITLES = {
    "mr": "Mister", "mrs": "Missus", "ms": "Miz", "dr": "Doctor", "prof": "Professor",
    "st": "Saint", "mt": "Mount", "ft": "Fort", "gen": "General", "capt": "Captain",
    "lt": "Lieutenant", "sgt": "Sergeant", "col": "Colonel", "gov": "Governor",
    "sen": "Senator", "rep": "Representative", "rev": "Reverend", "hon": "Honorable",
    "pres": "President", "supt": "Superintendent", "cmdr": "Commander", "adm": "Admiral",
    "maj": "Major", "sr": "Senior", "jr": "Junior",
}  # fmt: skip
# After a name or a number ("Elm Dr.", "5th Ave.").
STREETS = {
    "st": "Street", "dr": "Drive", "ave": "Avenue", "av": "Avenue", "blvd": "Boulevard",
    "rd": "Road", "ln": "Lane", "ct": "Court", "pl": "Place", "pkwy": "Parkway",
    "hwy": "Highway", "sq": "Square", "ter": "Terrace", "cir": "Circle", "mtn": "Mountain",
    "jr": "Junior", "sr": "Senior", "inc": "Incorporated", "ltd": "Limited",
    "corp": "Corporation", "co": "Company", "bros": "Brothers",
}  # fmt: skip
# Only before a number ("No. 5", "Fig. 3", "ext. 204").
BEFORE_NUMBER = {
    "no": "number", "nos": "numbers", "fig": "figure", "figs": "figures", "vol": "volume",
    "ch": "chapter", "chap": "chapter", "pp": "pages", "p": "page", "ext": "extension",
    "apt": "apartment", "ste": "suite", "rm": "room", "pt": "part", "sec": "section",
    "art": "article", "eq": "equation", "ca": "circa", "approx": "approximately",
}  # fmt: skip
# Anywhere, with their period ("vs" without one too).
ALWAYS = {
    "e.g": "for example", "i.e": "that is", "etc": "et cetera", "vs": "versus",
    "approx": "approximately", "incl": "including", "esp": "especially",
    "dept": "department", "govt": "government", "misc": "miscellaneous", "cf": "compare",
    "a.m": "AM", "p.m": "PM", "mon": "Monday", "tue": "Tuesday", "tues": "Tuesday",
    "wed": "Wednesday", "thu": "Thursday", "thur": "Thursday", "thurs": "Thursday",
    "fri": "Friday", "sat": "Saturday", "sun": "Sunday",
}  # fmt: skip
# Abbreviations whose period never ends the sentence (a word always follows).
NEVER_FINAL = frozenset({"e.g", "i.e", "vs", "approx", "incl", "esp", "cf"})
NO_PERIOD = frozenset({"vs", "mr", "mrs", "ms", "dr", "st"})  # also written without one
HONORIFICS = frozenset({"mr", "mrs", "ms", "prof"})  # titles wherever they stand ("Mr. and Mrs.")
# Capitalized words that are not names: "The St. Louis ..." is Saint, not "The Street".
NOT_NAMES = table(
    "The A An In On At To From Visit Near By And Or Of With For On Off Via Up Down Past "
    "This That Our Your My His Her Their Its Is Was"
)
TITLE_WORDS = frozenset(TITLES.values())  # "Senior St": a title read out is not a name
KEYS = frozenset(TITLES) | frozenset(STREETS) | frozenset(BEFORE_NUMBER) | frozenset(ALWAYS)

# Roman numerals: after these words they are numbers ("Chapter IV", "World War II").
ROMAN_AFTER = table(
    "chapter part volume vol book act scene section article episode phase stage type class "
    "level title appendix war bowl apollo mark mk round grade tier psalm canto schedule"
)
# After these names they are regnal ordinals ("Henry VIII" → "Henry the Eighth").
REGNAL = table(
    "Henry Edward Elizabeth Louis George William Charles James Richard John Paul Pius Leo "
    "Benedict Gregory Innocent Clement Philip Frederick Ferdinand Napoleon Peter Catherine "
    "Mary Victoria Alexander Nicholas Ivan Ramesses Ramses Constantine Otto Alfonso Carlos "
    "Juan Felipe Gustav Olaf Harald Haakon Christian Wilhelm Francis Ptolemy Selim Mehmed "
    "Murad Anne Isabella Henri Karl Ludwig Stephen Malcolm David Robert Urban Sixtus "
    "Boniface Adrian Julius Rama Amenhotep Thutmose Seti"
)
_ROMAN = re.compile(r"M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
ROMAN_LETTERS = frozenset("IVXL")  # C, D and M read as numbers too often by mistake ("DC")

SYMBOLS = {
    "&": "and", "+": "plus", "=": "equals", "@": "at", "%": "percent", "#": "number",
    "~": "about", "×": "times",  # noqa: RUF001 "÷": "divided by", "°": "degrees", "/": "slash",
    "→": "to", "≈": "about", "<": "less than", ">": "greater than",
}  # fmt: skip
_AMPERSAND = re.compile(r"([A-Za-z]+)&([A-Za-z]+)")
_HASH_NUMBER = re.compile(r"([#@])([0-9]+)")  # "#5" is number five, "@5" at five
_HANDLE = re.compile(r"[#@][^\W\d_](?:[^\W\d_]|[0-9])*")  # a letter first, then letters, digits
_DIGIT_TAG = re.compile(r"[#@][0-9]+[^\W\d_](?:[^\W\d_]|[0-9])*")  # "#1st", "@2pac"
# A word with a plural: letters and digits, inner hyphens ("e-mail", "MP3", "5").
_PLURAL_STEM = re.compile(r"(?:[^\W\d_]|[0-9])+(?:-(?:[^\W\d_]|[0-9])+)*")


def _cased(expansion: str, written: str) -> str:
    """``expansion`` with a capital first letter where ``written`` has one."""
    if written[:1].isupper() and expansion[:1].islower():
        return expansion[0].upper() + expansion[1:]
    return expansion


def _name_before(ctx: Context, i: int) -> bool:
    """Token ``i - 1`` is a name or a number a street-type word follows ("Oak", "5th")."""
    before = ctx.core(i - 1)
    if not ctx.joined(i - 1, i):
        return False
    if before[:1].isdigit():
        return True
    return ctx.capitalized(i - 1) and before not in NOT_NAMES and before not in TITLE_WORDS


def abbreviation(ctx: Context, i: int) -> Match | None:
    """An abbreviation in the tables, read as its context says."""
    core = ctx.core(i)
    key = core.lower()
    dotted = ctx.trail(i).startswith(".")
    if key not in KEYS or not (dotted or key in NO_PERIOD or "." in key):
        return None
    titled = core[:1].isupper() and (core[1:].islower() or not core[1:])  # "St", not "ST"
    after = ctx.core(i + 1)  # a name: capitalized, not in capitals ("St. AM" is no saint)
    name_after = ctx.capitalized(i + 1) and not after.isupper() and (dotted or ctx.joined(i, i + 1))
    keep = ctx.sentence_ends_after(i) and key not in NEVER_FINAL
    if key in STREETS and titled and _name_before(ctx, i):
        return ctx.replace(i, i, STREETS[key], period=True, ends=keep)
    if key in TITLES and titled and (name_after or key in HONORIFICS):
        return ctx.replace(i, i, TITLES[key], period=True)
    if key in BEFORE_NUMBER and ctx.core(i + 1)[:1].isdigit():
        return ctx.replace(i, i, _cased(BEFORE_NUMBER[key], core), period=True)
    if key in ALWAYS:
        return ctx.replace(i, i, _cased(ALWAYS[key], core), period=True, ends=keep)
    return None


def _roman_value(numeral: str) -> int:
    total = 0
    for letter, after in zip(numeral, [*numeral[1:], ""], strict=True):
        value = _ROMAN_VALUES[letter]
        total += -value if after and _ROMAN_VALUES[after] > value else value
    return total


def roman(ctx: Context, i: int) -> Match | None:
    """A Roman numeral after a word that makes it a number: "World War II" → "two",
    "Henry VIII" → "the Eighth", "Final Fantasy VII" → "seven" (two letters at least then)."""
    core = ctx.core(i)
    if not core or not set(core) <= ROMAN_LETTERS or _ROMAN.fullmatch(core) is None:
        return None
    if not ctx.joined(i - 1, i):
        return None
    before = ctx.core(i - 1)
    value = _roman_value(core)
    if before in REGNAL:
        return ctx.replace(i, i, "the " + ordinal(value).capitalize())
    if before.lower() in ROMAN_AFTER:
        return ctx.replace(i, i, cardinal(value))
    # Not after a regnal ordinal read out ("Henry the First II"): that would read it again.
    generic = len(core) >= 2 and set(core) <= {"I", "V", "X"} and ctx.core(i - 2) != "the"
    if generic and ctx.capitalized(i - 1) and before not in NOT_NAMES and not before.isupper():
        return ctx.replace(i, i, cardinal(value))
    return None


def symbol(ctx: Context, i: int) -> Match | None:
    """A symbol standing alone ("A & B"), "R&D", "C++", "#5", "@name" and "#tag2024" (the
    digits of a handle or tag as numbers); a tag or handle may start with digits ("#1st" →
    "hashtag first", "#100days" → "hashtag one hundred-days", "@2pac" → "at two-pac", "@3pm" →
    "at three PM")."""
    if not ctx.options.symbols:
        return None
    core = ctx.core(i)
    if core in SYMBOLS:
        return ctx.replace(i, i, SYMBOLS[core])
    if len(core) == 1:
        return None
    found = _AMPERSAND.fullmatch(core)
    if found is not None:
        return ctx.replace(i, i, f"{found[1]} and {found[2]}")
    if core.endswith("++") and core[:-2].isalpha():
        return ctx.replace(i, i, f"{core[:-2]} plus plus")
    found = _HASH_NUMBER.fullmatch(core)
    if found is not None:
        return ctx.replace(i, i, f"{'number' if found[1] == '#' else 'at'} {integer(found[2])}")
    if _HANDLE.fullmatch(core) is not None:
        return ctx.replace(i, i, f"{'hashtag' if core[0] == '#' else 'at'} {mixed_words(core[1:])}")
    if _DIGIT_TAG.fullmatch(core) is not None:
        sign = "hashtag" if core[0] == "#" else "at"
        return ctx.replace(i, i, f"{sign} {counted(core[1:]) or mixed_words(core[1:])}")
    return None


def optional_plural(ctx: Context, i: int) -> Match | None:
    """``friend(s)`` → "friends", ``e-mail(s)`` → "e-mails", ``MP3(s)`` → "MP-threes",
    ``5(s)`` → "fives", ``1990(s)`` → "nineteen nineties" (as "5s" and "1990s" are read)."""
    if not ctx.options.plurals:
        return None
    core = ctx.core(i)  # the closing ")" is a closing mark: the core is "friend(s"
    if not (core.endswith("(s") and ctx.trail(i).startswith(")")):
        return None
    stem = core[:-2]
    if _PLURAL_STEM.fullmatch(stem) is None:
        return None
    token = ctx.tokens[i]
    said = mixed_words(stem)  # a number's plural is its last word's ("MP6" → "MP-sixes")
    spoken = counted(stem + "s") or (plural(said) if stem[-1].isdigit() else said + "s")
    return Match(token.core_start, token.core_end + 1, spoken)
