"""What every rule reads (``tts_server/normalize/context.py``): a token's core and marks,
and whether it is a capitalized word."""

from __future__ import annotations

import pytest

from tts_server.normalize.context import Context, Options


@pytest.mark.parametrize(
    ("word", "capitalized"),
    [("Smith", True), ("O'Neil", True), ("X", True), ("smith", False), ("4A", False)],
)
def test_a_capitalized_word_is_known_by_its_first_letter(word: str, capitalized: bool) -> None:
    assert Context(f"({word}),", Options()).capitalized(0) is capitalized


def test_a_tokens_core_lead_and_trail() -> None:
    ctx = Context("(“Hi,” she said.)", Options())
    assert [(ctx.lead(i), ctx.core(i), ctx.trail(i)) for i in range(3)] == [
        ("(“", "Hi", ",”"),
        ("", "she", ""),
        ("", "said", ".)"),
    ]
    assert (ctx.core(-1), ctx.core(3)) == ("", "")  # outside the text


def test_two_tokens_are_joined_with_no_mark_between_them() -> None:
    ctx = Context('5 km, 6 "mi" 7 mi', Options())
    assert [ctx.joined(i, i + 1) for i in range(5)] == [True, False, False, False, True]
    assert (ctx.joined(-1, 0), ctx.joined(5, 6)) == (False, False)  # outside the text
