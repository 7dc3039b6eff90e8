"""Number words, from num2words: cardinals, ordinals, years, decimals, digits one by one.

Only ASCII digits are numbers here (``[0-9]``, never ``\\d``): ``int`` cannot read every
character ``\\d`` matches. num2words costs about 0.1 ms a call, so its answers are cached.
"""

from __future__ import annotations

from functools import lru_cache

from num2words import num2words

MAX_CARDINAL_DIGITS = 15  # a longer run is an identifier, read digit by digit
DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


@lru_cache(maxsize=4096)
def cardinal(value: int) -> str:
    """``105`` → "one hundred and five" (num2words' words, without its commas)."""
    return num2words(value).replace(",", "")


@lru_cache(maxsize=1024)
def ordinal(value: int) -> str:
    """``21`` → "twenty-first"."""
    return num2words(value, to="ordinal").replace(",", "")


@lru_cache(maxsize=1024)
def year(value: int) -> str:
    """``1999`` → "nineteen ninety-nine", ``2005`` → "two thousand and five"."""
    return num2words(value, to="year").replace(",", "")


def digits(text: str) -> str:
    """Each ASCII digit of ``text`` as a word: ``"0417"`` → "zero four one seven"."""
    return " ".join(DIGIT_WORDS[ord(c) - 48] for c in text if "0" <= c <= "9")


def integer(text: str) -> str:
    """Digits (thousands commas allowed) as a cardinal; a leading zero or a run of more than
    ``MAX_CARDINAL_DIGITS`` digits is read digit by digit (an identifier, not an amount)."""
    plain = text.replace(",", "")
    if len(plain) > MAX_CARDINAL_DIGITS or (len(plain) > 1 and plain[0] == "0"):
        return digits(plain)
    return cardinal(int(plain))


def number(text: str) -> str:
    """``"3.14"`` → "three point one four", ``"1,200"`` → "one thousand two hundred"."""
    whole, point, fraction = text.partition(".")
    spoken = cardinal(0) if not whole else integer(whole) if whole != "0" else "zero"
    return f"{spoken} point {digits(fraction)}" if point and fraction else spoken


def plural(words: str) -> str:
    """The plural of a number's last word: "nineteen ninety" → "nineteen nineties"."""
    if words.endswith("y"):
        return words[:-1] + "ies"
    if words.endswith("x"):
        return words + "es"
    return words + "s"


def fraction(numerator: int, denominator: int) -> str:
    """``3/4`` → "three quarters", ``1/2`` → "one half", ``5/16`` → "five sixteenths"."""
    top = cardinal(numerator)
    if denominator == 2:
        bottom = "half" if numerator == 1 else "halves"
    elif denominator == 4:
        bottom = "quarter" if numerator == 1 else "quarters"
    else:
        bottom = ordinal(denominator)
        bottom = bottom if numerator == 1 else plural(bottom)
    return f"{top} {bottom}"


def clock_words(hour: int, minute: int, second: int | None, half: str) -> str:
    """A time said: "ten thirty AM", "nine oh five", "fourteen hundred", "ten o'clock"."""
    words = cardinal(hour)
    if minute:
        words += f" oh {cardinal(minute)}" if minute < 10 else f" {cardinal(minute)}"
    elif not half:
        words += " o'clock" if 1 <= hour <= 12 else " hundred"
    if second:
        words += f" and {cardinal(second)} second{'s' if second != 1 else ''}"
    return f"{words} {half}" if half else words
