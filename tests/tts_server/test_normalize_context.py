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
