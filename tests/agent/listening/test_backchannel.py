"""Which transcripts are backchannels: only words of the list, or none."""

from __future__ import annotations

import pytest

from agent.config import BACKCHANNEL_WORDS
from agent.listening.backchannel import MURMURS, only_backchannel, only_murmurs, words


@pytest.mark.parametrize(
    "text",
    [
        *("", " ", "...", "Mm-hmm.", "Mhm.", "Mmm.", "Uh-huh.", "Uh-uh.", "Okay.", "OK!", "Ooh!"),
        *("Right, right.", "I see.", "Oh, I see.", "Yeah, okay.", "Hmm?"),
    ],
)
def test_only_words_of_the_list_or_none_are_a_backchannel(text: str) -> None:
    assert only_backchannel(text, BACKCHANNEL_WORDS)


@pytest.mark.parametrize(
    "text",
    ["Stop.", "Wait.", "I see you.", "Okay, stop.", "No.", "Yeah, but why?", "see", "Mwah!"],
)
def test_any_other_word_is_not(text: str) -> None:
    assert not only_backchannel(text, BACKCHANNEL_WORDS)


def test_a_phrase_of_the_list_matches_only_its_words_in_a_row() -> None:
    assert only_backchannel("I see, I see.", ("i see",))
    assert not only_backchannel("I", ("i see",)) and not only_backchannel("see I", ("i see",))
    assert only_backchannel("uh huh", ("uh-huh",))  # a hyphen is a space
    assert words("Don't, mm-HM!") == ("don't", "mm", "hm")


@pytest.mark.parametrize(
    "text", ["Mm-hmm.", "Mm-", "Mm.", "Mmm.", "Mhm.", "Uh-huh.", "Mm-hmm. Mm-hmm."]
)
def test_a_closed_mouths_murmurs_are_only_murmurs_and_the_list_resumes_on_them(text: str) -> None:
    assert only_murmurs(text)
    assert only_backchannel(text, BACKCHANNEL_WORDS)  # what a murmur reading becomes resumes


@pytest.mark.parametrize(
    "text",
    [
        *("", "...", "Hmm.", "Hmm. Hmm.", "Yeah.", "Oh.", "Okay.", "Um...", "Uh-uh.", "Mm-h"),
        *("Mm-hmm, no.", "Mm-hmm. Stop.", "Memo.", "Hey."),
    ],
)
def test_no_word_a_lone_hmm_another_backchannel_or_any_other_word_is_not_a_murmur(
    text: str,
) -> None:
    """A reading after the murmur prompt stands only as murmurs: "Hmm." is what a breathy
    "Hey." became after it, and "yeah" or "oh" are left to the reading without it."""
    assert not only_murmurs(text)


def test_every_murmur_is_a_backchannel_of_the_default_list() -> None:
    assert all(only_backchannel(murmur, BACKCHANNEL_WORDS) for murmur in MURMURS)
