"""Which transcripts are backchannels: only words of the list, or none."""

from __future__ import annotations

import pytest

from agent.config import BACKCHANNEL_WORDS
from agent.listening.backchannel import only_backchannel, words


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
