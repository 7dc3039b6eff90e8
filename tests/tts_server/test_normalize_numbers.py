"""The normalizer's number words (``tts_server/normalize/numbers.py``), function by function.

The corpus (``test_normalize.py``) reads whole sentences; these pin each reading's edges:
the plural of every ending, halves and quarters, a clock's "oh", "o'clock" and "hundred", its
seconds, and where an integer turns into an identifier read digit by digit.
"""

from __future__ import annotations

import pytest

from tts_server.normalize.numbers import clock_words, digits, fraction, integer, number, plural


@pytest.mark.parametrize(
    ("words", "spoken"),
    [
        ("nineteen ninety", "nineteen nineties"),
        ("twenty", "twenties"),
        ("six", "sixes"),
        ("seven", "sevens"),
        ("sixth", "sixths"),
    ],
)
def test_the_plural_of_a_numbers_last_word(words: str, spoken: str) -> None:
    assert plural(words) == spoken


@pytest.mark.parametrize(
    ("numerator", "denominator", "spoken"),
    [
        (1, 2, "one half"),
        (3, 2, "three halves"),
        (1, 4, "one quarter"),
        (3, 4, "three quarters"),
        (1, 3, "one third"),
        (2, 3, "two thirds"),
        (1, 16, "one sixteenth"),
        (5, 16, "five sixteenths"),
    ],
)
def test_a_fraction_says_halves_and_quarters_and_otherwise_ordinals(
    numerator: int, denominator: int, spoken: str
) -> None:
    assert fraction(numerator, denominator) == spoken


@pytest.mark.parametrize(
    ("hour", "minute", "second", "half", "spoken"),
    [
        (9, 5, None, "", "nine oh five"),
        (9, 9, None, "", "nine oh nine"),
        (10, 10, None, "", "ten ten"),  # "oh" only below ten minutes
        (1, 0, None, "", "one o'clock"),
        (10, 0, None, "", "ten o'clock"),
        (12, 0, None, "", "twelve o'clock"),
        (13, 0, None, "", "thirteen hundred"),  # a 24-hour time
        (0, 0, None, "", "zero hundred"),
        (10, 30, None, "AM", "ten thirty AM"),
        (10, 0, None, "PM", "ten PM"),  # no "o'clock" before AM or PM
        (10, 5, 1, "", "ten oh five and one second"),
        (10, 5, 2, "", "ten oh five and two seconds"),
        (10, 5, 30, "PM", "ten oh five and thirty seconds PM"),
        (10, 0, 5, "", "ten o'clock and five seconds"),
    ],
)
def test_a_clock_time_as_said(
    hour: int, minute: int, second: int | None, half: str, spoken: str
) -> None:
    assert clock_words(hour, minute, second, half) == spoken


@pytest.mark.parametrize(
    ("text", "spoken"),
    [
        ("0", "zero"),
        ("7", "seven"),
        ("1,000", "one thousand"),
        ("007", "zero zero seven"),  # a leading zero: an identifier
        ("05", "zero five"),  # however short
        ("100000000000000", "one hundred trillion"),  # 15 digits: still an amount
        ("1000000000000000", "one zero zero zero zero zero zero zero zero zero zero zero zero "
         "zero zero zero"),  # 16: an identifier
    ],
)  # fmt: skip
def test_an_integer_is_an_amount_up_to_fifteen_digits(text: str, spoken: str) -> None:
    assert integer(text) == spoken


@pytest.mark.parametrize(
    ("text", "spoken"),
    [
        ("3.14", "three point one four"),
        ("0.5", "zero point five"),
        (".5", "zero point five"),
        ("3.", "three"),
        ("1,200.5", "one thousand two hundred point five"),
    ],
)
def test_a_decimal_reads_its_fraction_digit_by_digit(text: str, spoken: str) -> None:
    assert number(text) == spoken


def test_digits_skips_what_is_not_an_ascii_digit() -> None:
    assert digits("04-17") == "zero four one seven"
    assert digits("12:30 AM") == "one two three zero"  # ":" and capitals come after "9"
