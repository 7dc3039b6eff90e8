"""Addresses and phone numbers (``tts_server/normalize/web.py``), function by function: the
runs of an address (digits from zero, the symbols of a path), and where a phone number ends."""

from __future__ import annotations

import pytest

from tts_server.normalize import normalize
from tts_server.normalize.web import _spell


@pytest.mark.parametrize(
    ("part", "spoken"),
    [
        ("agent007", "agent zero zero seven"),  # a run of digits that starts with zero
        ("Talk:Main", "Talk colon Main"),
        ("q=cats", "q equals cats"),
        ("my_file-2.txt", "my underscore file dash two dot txt"),
    ],
)
def test_an_address_part_is_spelled_run_by_run(part: str, spoken: str) -> None:
    assert _spell(part) == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        (
            "Mail agent007@example.com today.",
            "Mail agent zero zero seven at example dot com today.",
        ),
        (
            "See https://en.wikipedia.org/wiki/Talk:Main now.",
            "See en dot wikipedia dot org slash wiki slash Talk colon Main now.",
        ),
    ],
)
def test_an_address_in_a_sentence(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        (  # four tokens at most: the number after it is not one of its groups
            "Call +44 20 7946 0958 24 hours a day.",
            "Call plus four four, two zero, seven nine four six, zero nine five eight "
            "twenty-four hours a day.",
        ),
        ("Call 555-1234 now.", "Call five five five, one two three four now."),
        ("It weighs 200-1000 kg.", "It weighs two hundred to one thousand kilograms."),  # a range
    ],
)
def test_where_a_phone_number_ends(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Open http://my.local now", "Open my dot local now"),  # a scheme: any domain
        ("Visit www.site.internal today", "Visit w w w dot site dot internal today"),
        ("Visit WWW.site.internal today", "Visit w w w dot site dot internal today"),
        (
            "Open http://localhost.dev:8080 now",
            "Open localhost dot dev colon eight zero eight zero now",
        ),
        ("See https://example.com/ now", "See example dot com now"),  # no trailing "slash"
        ("See https://example.com/a//b now", "See example dot com slash a slash b now"),
        ("See https://example.com/Xbox/X now", "See example dot com slash Xbox slash X now"),
        ("Call (555)123-4567 now.", "Call five five five, one two three, four five six seven now."),
        # a bare domain: a known top-level domain and a letter in some label before it
        ("Visit 123.example.com today", "Visit one two three dot example dot com today"),
        ("Visit mail.123.com today", "Visit mail dot one two three dot com today"),
        ("He scored 5.So we won.", "He scored five-So we won."),  # a space not typed
    ],
)
def test_what_makes_an_address_and_its_parts(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken
