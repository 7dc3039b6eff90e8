"""Quantities (``tts_server/normalize/quantities.py``), function by function: money's
dollars and cents, when a four-digit number is a year, and the two ends of a range."""

from __future__ import annotations

import pytest

from tts_server.normalize import Options, normalize
from tts_server.normalize.quantities import _money, counted


@pytest.mark.parametrize(
    ("value", "spoken"),
    [
        ("1,234.50", "one thousand two hundred and thirty-four dollars and fifty cents"),
        ("5.00", "five dollars"),  # no "zero cents"
        ("5.01", "five dollars and one cent"),
        ("5.02", "five dollars and two cents"),
        (".50", "fifty cents"),  # no "zero dollars"
        ("0.50", "fifty cents"),
        (".00", "zero dollars"),
        ("1", "one dollar"),
    ],
)
def test_dollars_and_cents(value: str, spoken: str) -> None:
    assert _money(value, "", "$") == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("1969 brought the moon landing", "nineteen sixty-nine brought the moon landing"),
        ("Founded 1969", "Founded nineteen sixty-nine"),  # last in the text
        ("And then, 1969 changed everything", "And then, nineteen sixty-nine changed everything"),
        ("Apollo flew; then 1969 was over.", "Apollo flew; then nineteen sixty-nine was over."),
        (
            "Apollo 11 landed in July 1969, the year of Woodstock.",
            "Apollo eleven landed in July nineteen sixty-nine, the year of Woodstock.",
        ),
        ("The total is 1500 people.", "The total is one thousand five hundred people."),
    ],
)
def test_a_four_digit_number_is_a_year_by_its_neighbours(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("From 2020-24 it grew.", "From twenty twenty to twenty-four it grew."),
        ("From 2005-08 it grew.", "From two thousand and five to two thousand and eight it grew."),
        (
            "Groups of 1500-15000 people.",
            "Groups of one thousand five hundred to fifteen thousand people.",
        ),
        ("Prices rose 10%-20% this year.", "Prices rose ten percent to twenty percent this year."),
        ("Run 5km-10km daily.", "Run five kilometers to ten kilometers daily."),
        (
            "It raised $1M-5M in funding.",
            "It raised one million to five million dollars in funding.",
        ),
        ("Grew 5k-10M.", "Grew five thousand to ten million."),
    ],
)
def test_each_end_of_a_range(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Add 1 1/2", "Add one and one half"),  # the text ends at the fraction
        ("It fell -1 1/2 points.", "It fell minus one and one half points."),
        ("It costs $2 1/2 each", "It costs two and one half dollars each"),
        ("2x 1/2 is 1", "two times one half is one"),  # a suffix: a product, not a mixed number
        ("2.5 1/2", "two point five one half"),  # only a whole number takes a fraction
        ("3 4/4", "three four over four"),  # and only a proper one
    ],
)
def test_a_whole_number_and_a_fraction(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Run 5Km daily.", "Run five kilometers daily."),  # a case slip: "km"
        ("It has 4MB of memory.", "It has four megabytes of memory."),  # not megabits
        ("It sends 4Mb a second.", "It sends four megabits a second."),
    ],
)
def test_a_units_symbol_by_its_case(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("the 1990's", "the nineteen nineties"),
        ("the 80’s", "the eighties"),  # the typographic apostrophe
        ("IQs in the 150s", "IQs in the one hundred and fifties"),  # not a year: "one fifties"
        ("Lunch at 1pm.", "Lunch at one PM."),
        ("Lunch at 12pm.", "Lunch at twelve PM."),
        ("Lunch at 1.30pm.", "Lunch at one thirty PM."),  # the first hour of the clock
        ("Lunch at 12.15pm.", "Lunch at twelve fifteen PM."),  # and its last
        ("Tea at 10.30am.", "Tea at ten thirty AM."),  # a time as British English writes it
        ("Doors at 07pm.", "Doors at seven PM."),  # an hour's leading zero is not said
        ("at 13.30pm", "at thirteen point three zero PM"),  # no hour of a 12-hour clock
        ("Meet ~5pm.", "Meet about five PM."),
        ("at 5.5pm", "at five point five PM"),  # no time: the number as written, and its letters
    ],
)
def test_a_numbers_suffix_decade_or_time_of_day(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Pick a number: max 9, min 1.", "Pick a number: max nine, min one."),  # not "minutes"
        ("The F0 contour rises.", "The F-zero contour rises."),  # its only digit a zero
        ("The K9 unit arrived.", "The K-nine unit arrived."),  # and a nine
        ("Of these 13 am I the only one?", "Of these thirteen am I the only one?"),  # no hour
    ],
)
def test_the_word_after_a_number_and_a_word_with_a_digit(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Dinner at 7 pm.", "Dinner at seven PM."),
        ("Lunch at 1 pm.", "Lunch at one PM."),  # the first hour of the clock
        ("Lunch at 12 pm.", "Lunch at twelve PM."),  # and its last
        ("It raised ~$5 million.", "It raised about five million dollars."),
    ],
)
def test_the_word_after_a_number_read_into_it(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Built in 1100.", "Built in eleven hundred."),  # the first year read as one
        ("Built in 1099.", "Built in one thousand and ninety-nine."),
        ("By 2099 it ends.", "By twenty ninety-nine it ends."),  # the last
        ("By 2100 it ends.", "By two thousand one hundred it ends."),  # past it: an amount
        ("It costs $1999.", "It costs one thousand nine hundred and ninety-nine dollars."),
    ],
)
def test_the_years_a_four_digit_number_can_be(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("The 3-2-1 countdown", "The three-two-one countdown"),  # no range: three numbers
        ("He is 5'10 tall.", "He is five-ten tall."),  # no range without a dash
    ],
)
def test_a_token_of_numbers_that_is_no_range(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize("token", ["5%X10", "20°X30"])
def test_only_a_dash_between_two_quantities_makes_a_range(token: str) -> None:
    assert " to " not in normalize(f"Mix {token} now").text  # only a dash makes a range


def test_with_units_off_a_units_symbol_stays_but_a_multiplier_is_read() -> None:
    assert normalize("Run 5km, 10x faster", Options(units=False)).text == (
        "Run five-km, ten times faster"
    )


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Divide by 3/0 now", "Divide by three slash zero now"),  # no fraction of zero
        ("Divide 5/1 now", "Divide five over one now"),
        ("x = 3/3", "x equals three over three"),  # a fraction is less than one
        ("It is 5/3 of that", "It is five over three of that"),
        ("Only 1/100 passed", "Only one one hundredth passed"),  # the last denominator said
        ("Only 1/101 passed", "Only one over one hundred and one passed"),
    ],
)
def test_a_fraction_or_one_number_over_another(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Install v1.2.3 now", "Install version one point two point three now"),
        ("Install version v1.2.3 now", "Install version one point two point three now"),
        ("Install 1.2.3 now", "Install one point two point three now"),
    ],
)
def test_a_version_says_version_once(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("word", "spoken"),
    [
        ("1st", "first"),
        ("5s", "fives"),
        ("1990s", "nineteen nineties"),
        ("9th", "ninth"),  # the last first digit
        ("007s", None),  # an identifier: a zero first
        ("5k", None),  # a scale, no suffix
        ("1.5s", None),  # no whole number
        ("5km", None),  # a unit is no ordinal or plural
        ("1stday", None),  # more than the suffix
        ("$5s", None),  # a currency first
        ("-5th", None),  # a sign first
        ("MP3s", None),
    ],
)
def test_a_number_counted_as_an_ordinal_or_a_plural(word: str, spoken: str | None) -> None:
    assert counted(word) == spoken
