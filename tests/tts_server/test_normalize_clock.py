"""Dates (``tts_server/normalize/clock.py``), function by function: the century of a
two-digit year, and when the year after a named date is part of that date."""

from __future__ import annotations

import pytest

from tts_server.normalize import Options, normalize
from tts_server.normalize.clock import _date, time
from tts_server.normalize.context import Context


def reading(written: str) -> tuple[str, list[str]]:
    """What ``written`` is read as, and the written text of each replacement."""
    normalized = normalize(written)
    return normalized.text, [
        written[r.written_start : r.written_end] for r in normalized.replacements
    ]


@pytest.mark.parametrize(
    ("year_text", "spoken"),
    [
        ("99", "March fifth, nineteen ninety-nine"),
        ("30", "March fifth, nineteen thirty"),  # the first year of the 1900s
        ("29", "March fifth, twenty twenty-nine"),  # the last of the 2000s
        ("2024", "March fifth, twenty twenty-four"),
    ],
)
def test_a_two_digit_years_century_turns_at_thirty(year_text: str, spoken: str) -> None:
    assert _date(3, 5, year_text) == spoken


@pytest.mark.parametrize(
    ("written", "spoken", "spans"),
    [
        ("Due March 5", "Due March fifth", ["March 5"]),  # the text ends at the day
        ("Due March 5 2024", "Due March fifth twenty twenty-four", ["March 5 2024"]),
        ("Due March 5, 2024", "Due March fifth, twenty twenty-four", ["March 5, 2024"]),
        (
            "The March 5 2024 deadline",  # the year is the date's: alone it is an amount
            "The March fifth twenty twenty-four deadline",
            ["March 5 2024"],
        ),
        (  # day first: the year is the date's too, where alone it would be an amount
            "Held 5 March 2024 in Rome",
            "Held the fifth of March twenty twenty-four in Rome",
            ["5 March 2024"],
        ),
        (  # a closing mark after the day ends the date
            "(March 5) 2024 was",
            "(March fifth) twenty twenty-four was",
            ["March 5", "2024"],
        ),
        (  # and so does an opening mark before the year
            "Released March 5 (2024) in Europe.",
            "Released March fifth (twenty twenty-four) in Europe.",
            ["March 5", "2024"],
        ),
    ],
)
def test_the_year_after_a_named_date_is_read_into_it(
    written: str, spoken: str, spans: list[str]
) -> None:
    assert reading(written) == (spoken, spans)


@pytest.mark.parametrize(
    ("written", "spoken", "spans"),
    [
        ("Lap time 10:30:15 today", "Lap time ten thirty and fifteen seconds today", ["10:30:15"]),
        ("Open 9:00-5:00 pm", "Open nine o'clock to five PM", ["9:00-5:00 pm"]),  # PM at the end
        ("Meet at 10:30.", "Meet at ten thirty.", ["10:30"]),  # the period is the sentence's
        (  # a chain of times: each in turn, the half of the day on the last
            "Slots 9:00-10:00-11:00 today",
            "Slots nine o'clock to ten o'clock to eleven o'clock today",
            ["9:00-10:00-11:00"],
        ),
        (
            "Slots 9:00–10:00–11:00–12:00 pm",  # en dashes
            "Slots nine o'clock to ten o'clock to eleven o'clock to twelve PM",
            ["9:00–10:00–11:00–12:00 pm"],
        ),
        (  # a bare hour in a chain: its number
            "Open 9:00-10-11:00 daily.",
            "Open nine o'clock to ten to eleven o'clock daily.",
            ["9:00-10-11:00"],
        ),
        ("Open 9-10:30 daily", "Open nine to ten thirty daily", ["9-10:30"]),  # first
        ("Open 9:00-10 pm", "Open nine o'clock to ten PM", ["9:00-10 pm"]),  # the half on it
        ("Open 10am-11:30am", "Open ten AM to eleven thirty AM", ["10am-11:30am"]),  # its own
        ("Open 14:00-23 daily", "Open fourteen hundred to twenty-three daily", ["14:00-23"]),
    ],
)
def test_a_time_its_seconds_and_its_half_of_the_day(
    written: str, spoken: str, spans: list[str]
) -> None:
    assert reading(written) == (spoken, spans)


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("We march 5 miles.", "We march five miles."),  # a month is capitalized
        ("We did 5 march drills.", "We did five march drills."),
        ("Jan said hi.", "Jan said hi."),  # an abbreviation is a month with its period only
        ("It starts in Jan.", "It starts in January."),
        ("It starts in Jan. then ends", "It starts in January then ends"),
        ("It starts in Sept. then ends", "It starts in September then ends"),
        # a full name's period is the sentence's: kept, and no day after it
        ("Back in May. then it rained", "Back in May. then it rained"),
        ("It was due in March. 5 people came.", "It was due in March. five people came."),
        ("It was due in Mar. 5 or so.", "It was due in March fifth or so."),
        ("In March, 5 people came.", "In March, five people came."),  # a comma ends the date
        ("It rained in March (5 days).", "It rained in March (five days)."),
        ("Sent on 5 March", "Sent on the fifth of March"),  # day first, the text ending
    ],
)
def test_a_month_name_and_what_makes_it_a_date(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize("written", ["9:00-24", "9:00-100", "9:00-", "9:00-5x", "10-11"])
def test_what_is_no_chain_of_times(written: str) -> None:
    assert time(Context(written, Options()), 0) is None  # no hour, or no minutes in the chain
