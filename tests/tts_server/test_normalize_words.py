"""Words (``tts_server/normalize/words.py``), rule by rule: when an abbreviation is one,
which capital letters are a Roman numeral, and the symbols and plurals that look alike."""

from __future__ import annotations

import pytest

from tts_server.normalize import normalize


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("I said no 5 times", "I said no five times"),  # "No." needs its period
        ("Fruit, e.g, apples", "Fruit, for example, apples"),  # a dotted one needs no last one
    ],
)
def test_an_abbreviation_by_its_period(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Read Chapter IIII now.", "Read Chapter IIII now."),  # no numeral
        ("Super Bowl XLIV was close.", "Super Bowl forty-four was close."),  # all four letters
        ("Rocky II was good.", "Rocky two was good."),  # two letters after a name
        ("Rocky XII was good.", "Rocky twelve was good."),
        ("Rocky XVI was good.", "Rocky sixteen was good."),
        ("Rocky II is the best.", "Rocky two is the best."),
        ("Plan X failed.", "Plan X failed."),  # one letter after a name is a letter
        ("Tom and I went.", "Tom and I went."),  # and after any word
        ("Henry the First II", "Henry the First II"),  # a regnal ordinal read out already
    ],
)
def test_capital_letters_that_are_a_roman_numeral(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Size XL fits.", "Size XL fits."),  # not "at L": only # and @ start a handle
        ("Open (Mon) only", "Open (Mon) only"),  # a word in parentheses is no plural
    ],
)
def test_what_is_no_symbol_or_plural(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Tag #x now.", "Tag hashtag x now."),  # one letter is a tag
        ("Follow @user123 now.", "Follow at user-one hundred and twenty-three now."),
        ("Use #covid19 now.", "Use hashtag covid-nineteen now."),  # its digits as numbers
    ],
)
def test_a_handle_or_tag_with_its_sign(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Tag #1st now.", "Tag hashtag first now."),  # an ordinal, as "1st" alone
        ("Tag #22nd now.", "Tag hashtag twenty-second now."),
        ("Tag #1990s now.", "Tag hashtag nineteen nineties now."),  # a decade
        ("Tag #100days now.", "Tag hashtag one hundred-days now."),  # else as "MP3" is
        ("Tag #007bond now.", "Tag hashtag zero zero seven-bond now."),  # an identifier
        ("Tag #12 now.", "Tag number twelve now."),  # digits alone are a number
        ("Tag #3pm now.", "Tag hashtag three PM now."),  # a time, as "3pm" alone
        ("Tag @2pac now.", "Tag at two-pac now."),  # a handle keeps its sign too
        ("Tag @3pm now.", "Tag at three PM now."),
        ("Tag @1st now.", "Tag at first now."),
        ("Tag @12 now.", "Tag at twelve now."),
    ],
)
def test_a_tag_that_starts_with_digits(written: str, spoken: str) -> None:
    normalized = normalize(written)
    assert normalized.text == spoken
    (replacement,) = normalized.replacements  # the tag, its sign included, nothing else
    assert written[replacement.written_start : replacement.written_end] == written.split()[1]


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Pick the A(s) now.", "Pick the As now."),  # a one-letter word
        ("Send the e-mail(s) now.", "Send the e-mails now."),  # a hyphen inside the word
        ("Pick the MP3(s) now.", "Pick the MP-threes now."),  # its digits as numbers
        ("Pick the x-(s) now.", "Pick the x-(s) now."),  # no word before the plural
    ],
)
def test_the_word_an_optional_plural_follows(written: str, spoken: str) -> None:
    assert normalize(written).text == spoken


@pytest.mark.parametrize(
    ("written", "spoken"),
    [
        ("Pick 5(s) today.", "Pick fives today."),  # as "5s" is read
        ("In the 1990(s) too.", "In the nineteen nineties too."),  # a decade
        ("Pick the MP6(s) now.", "Pick the MP-sixes now."),  # the plural of its last word
        ("Pick the 5-6(s) now.", "Pick the five-sixes now."),
        ("Pick 007(s) now.", "Pick zero zero sevens now."),  # an identifier, digit by digit
    ],
)
def test_an_optional_plural_after_a_number(written: str, spoken: str) -> None:
    normalized = normalize(written)
    assert normalized.text == spoken
    (replacement,) = normalized.replacements  # the word and its "(s)", the period left out
    span = written[replacement.written_start : replacement.written_end]
    assert span == next(word for word in written.split() if "(s)" in word)
