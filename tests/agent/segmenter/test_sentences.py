"""SentenceCutter on its own: filtered text (plain text and marks) in, segments out."""

from __future__ import annotations

from typing import Any

import pytest

from agent.segmenter.sentences import SentenceCutter
from agent.segmenter.text_filter import BLOCK, CODE_OFF, CODE_ON, PARA

PLAIN: dict[str, Any] = {"max_chars": 350, "eager_min_words": None, "merge_under_words": 0}


def cutter(**options: Any) -> SentenceCutter:
    """A cutter with eager cuts and merging off unless ``options`` say otherwise."""
    return SentenceCutter(**{**PLAIN, **options})


def segments(text: str, **options: Any) -> list[str]:
    """All segments of ``text``, fed one character at a time."""
    sentences = cutter(**options)
    out = [segment for char in text for segment in sentences.push(char)]
    return out + sentences.flush("")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello there. How are you?", ["Hello there.", "How are you?"]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ("We waited… Then it started.", ["We waited…", "Then it started."]),
        ("你好！你是谁？", ["你好！", "你是谁？"]),
        ("Dr. Smith is in.", ["Dr. Smith is in."]),
        ("Ask e.g. Ann.", ["Ask e.g. Ann."]),
        ("See Fig. 3 now.", ["See Fig. 3 now."]),
        ("The U.S. Senate voted.", ["The U.S. Senate voted."]),
        ("She moved to the U.S. It was new.", ["She moved to the U.S.", "It was new."]),
        ("Pi is 3.14 and v2.1.0 is out.", ["Pi is 3.14 and v2.1.0 is out."]),
        ("Go to example.com. It has docs.", ["Go to example.com.", "It has docs."]),
        ("Well... maybe not.", ["Well... maybe not."]),
        ("I use npm. npm is fast.", ["I use npm. npm is fast."]),
        ("Steps: 1. Open it. 2. Close it.", ["Steps: 1. Open it.", "2. Close it."]),
    ],
)
def test_sentence_ends_and_false_ends(text: str, expected: list[str]) -> None:
    assert segments(text) == expected


def test_no_boundary_inside_a_code_span_and_its_marks_are_dropped() -> None:
    text = f"Run {CODE_ON}make test. Then deploy{CODE_OFF} now. Done."
    assert segments(text) == ["Run make test. Then deploy now.", "Done."]


def test_breaks_cut_and_whitespace_is_collapsed() -> None:
    text = f"First line{PARA}  Second   line{BLOCK}{BLOCK}Item{BLOCK}"
    assert segments(text) == ["First line", "Second line", "Item"]


def test_short_sentence_merges_across_a_paragraph_break_but_not_a_block() -> None:
    assert segments(f"Sure!{PARA}Here is the plan.", merge_under_words=2) == [
        "Sure! Here is the plan."
    ]
    assert segments(f"Sure!{BLOCK}Here is the plan.", merge_under_words=2) == [
        "Sure!",
        "Here is the plan.",
    ]
    assert segments("Yes. No. Maybe so.", merge_under_words=2) == ["Yes. No.", "Maybe so."]


def test_eager_cut_only_in_the_first_segment() -> None:
    text = "Well, that is a good question, and here is why, in short. Later, it waits."
    assert segments(text, eager_min_words=4) == [
        "Well, that is a good question,",
        "and here is why, in short.",
        "Later, it waits.",
    ]
    assert segments("One, two, three.", eager_min_words=1) == ["One,", "two, three."]
    assert segments("Costs 1,000 dollars, roughly.", eager_min_words=1) == [
        "Costs 1,000 dollars,",
        "roughly.",
    ]


@pytest.mark.parametrize(
    ("text", "max_chars", "expected"),
    [
        (
            "We went to the market, bought apples and pears, then walked home slowly.",
            30,
            ["We went to the market,", "bought apples and pears,", "then walked home slowly."],
        ),
        (
            "Short start, then a very long clause without any break at all here.",
            40,
            ["Short start, then a very long clause", "without any break at all here."],
        ),
        ("abcdefghijklmnopqrstuvwxyz" * 2, 26, ["abcdefghijklmnopqrstuvwxyz"] * 2),
    ],
)
def test_length_cap(text: str, max_chars: int, expected: list[str]) -> None:
    assert segments(text, max_chars=max_chars) == expected


def test_release_waits_only_for_the_evidence() -> None:
    sentences = cutter()
    assert sentences.push("Hello there.") == []
    assert sentences.push(" ") == []
    assert sentences.push("W") == ["Hello there."]
    assert sentences.push("hy not? ") == ["Why not?"]
    assert sentences.push("In the U.S. Th") == []
    assert sentences.push("e end") == ["In the U.S."]
    assert sentences.flush(".") == ["The end."]


def test_flush_resets_for_the_next_reply() -> None:
    sentences = cutter(eager_min_words=2)
    assert sentences.push("Well then, this is the first reply, ") == ["Well then,"]
    assert sentences.flush("") == ["this is the first reply,"]
    assert sentences.push("Second one, with eager cuts again. ") == ["Second one,"]
    sentences.reset()
    assert sentences.flush("") == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_chars": 19}, "max_chars must be at least 20"),
        ({"eager_min_words": 0}, "eager_min_words must be at least 1, or None"),
        ({"eager_min_words": -1}, "eager_min_words must be at least 1, or None"),
    ],
)
def test_invalid_options_are_refused_in_words(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        cutter(**options)
    assert str(caught.value) == message


@pytest.mark.parametrize("whole", [False, True], ids=["char-by-char", "one-chunk"])
def test_the_cap_cuts_at_the_last_space_within_it_never_past_it(whole: bool) -> None:
    """Mutation survivors pinned: a space one past the cap is not used (a chunk of an LLM can
    carry it in at once), and a space right after the first word is."""

    def cut(text: str) -> list[str]:
        sentences = cutter(max_chars=20)
        out = list(sentences.push(text)) if whole else [s for c in text for s in sentences.push(c)]
        return out + sentences.flush("")

    assert cut("a" * 21 + " bb.") == ["a" * 20, "a bb."]
    assert cut("a " + "b" * 30 + ".") == ["a", "b" * 20, "b" * 10 + "."]


def _every_way(text: str, **options: Any) -> list[list[str]]:
    """``text``'s segments fed a character at a time, in one push, and in the flush alone."""
    whole, ended = cutter(**options), cutter(**options)
    return [
        segments(text, **options),
        whole.push(text) + whole.flush(""),
        ended.flush(text),
    ]


# Mutation survivors pinned (docs/testing.md, the contract tier): each case fails one or more.
@pytest.mark.parametrize(
    ("text", "options", "expected"),
    [
        # punctuation that ends the reply past the cap: cut at the cap first, even at the end
        ("aaaa bbbb cccc dddd...", {"max_chars": 20}, ["aaaa bbbb cccc", "dddd..."]),
        ("aaaa bbbb cccc dddd... ", {"max_chars": 20}, ["aaaa bbbb cccc", "dddd..."]),
        ("aaaa bbbb cccc dddd,)))", {"max_chars": 20}, ["aaaa bbbb cccc", "dddd,)))"]),
        # a sentence end exactly at the cap (no space after a CJK mark) is not a cap cut
        ("ab cdefghijklmnopqr。下一句。", {"max_chars": 20}, ["ab cdefghijklmnopqr。", "下一句。"]),
        # the cap cut at a clause mark, then the next cap counts from the new segment
        (
            "aaaa bbbb, cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk",
            {"max_chars": 30},
            ["aaaa bbbb,", "cccc dddd eeee ffff gggg hhhh", "iiii jjjj kkkk"],
        ),
        # a run of dashes is one clause mark
        (
            "First part —— second part, third.",
            {"eager_min_words": 2},
            ["First part ——", "second part, third."],
        ),
        # code opened at the very start of a segment (after spaces, or after a CJK mark)
        (f"One.   {CODE_ON}x. Y{CODE_OFF} is code. Two.", {}, ["One.", "x. Y is code.", "Two."]),
        (
            f"你好！{CODE_ON}print(1). Then(){CODE_OFF} ok。",
            {},
            ["你好！", "print(1). Then() ok。"],
        ),
        # an ellipsis before an opener and a lower-case word goes on
        ('We waited… "maybe" not.', {}, ['We waited… "maybe" not.']),
        # an inline list number has at most three digits
        ("Steps: 123. Open it.", {}, ["Steps: 123. Open it."]),
        ("Steps: 1234. Open it.", {}, ["Steps: 1234.", "Open it."]),
        # after initials: a sentence opener ends the sentence (the longest one too), others not
        ("Talk to J. Therefore", {}, ["Talk to J.", "Therefore"]),
        ("Talk to J. Nevertheless", {}, ["Talk to J. Nevertheless"]),
        ("Talk to J. $5 is due.", {}, ["Talk to J. $5 is due."]),
        # the word before a period is read back 40 characters at most
        (
            "Ask " + ".".join("ABCDEFGHIJKLMNOPQRSTU") + ". Smith is here.",
            {},
            ["Ask " + ".".join("ABCDEFGHIJKLMNOPQRSTU") + ".", "Smith is here."],
        ),
    ],
)
def test_edges_of_the_cap_the_marks_and_the_openers(
    text: str, options: dict[str, Any], expected: list[str]
) -> None:
    assert _every_way(text, **options) == [expected] * 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a word of max_chars letters glued to its mark: the cut keeps a letter with the mark
        ("a" * 20 + ". Bbbb.", ["a" * 19, "a.", "Bbbb."]),
        ("a" * 20 + ".", ["a" * 19, "a."]),  # the reply's end
        ("a" * 20 + "!) Bbbb.", ["a" * 19, "a!)", "Bbbb."]),  # closers go with it
        ("a" * 20 + ", bbbb.", ["a" * 19, "a, bbbb."]),  # and clause marks
        ("a" * 20 + ")", ["a" * 19, "a)"]),  # and a closer alone (no special character)
        ("a" * 18 + "... Bbbb.", ["a" * 17, "a...", "Bbbb."]),  # the cap inside the marks
        ("你好" * 10 + "。下", ["你好" * 9 + "你", "好。", "下"]),  # no spaces at all
        # with a space before the cut: the word goes on with its marks
        ("Quoi " + "a" * 15 + " ? Bbbb.", ["Quoi", "a" * 15 + " ?", "Bbbb."]),
        ("a" * 20 + " ?", ["a" * 19, "a ?"]),  # the space at the cap: waits for the "?"
        ("xx " + "a" * 16 + ' "Hi" there', ["xx " + "a" * 16, '"Hi" there']),  # an opener
        ("a " + "." * 20, ["a", "." * 20]),  # marks that fill the cap alone are said alone
    ],
)
def test_a_cap_cut_leaves_no_mark_without_its_word(text: str, expected: list[str]) -> None:
    assert _every_way(text, max_chars=20) == [expected] * 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello there. ! Next one is here.", ["Hello there. !", "Next one is here."]),
        ("Stop. ?! Go on.", ["Stop. ?!", "Go on."]),
        ("Really? ! Yes.", ["Really?", "!", "Yes."]),  # no wait after "?" (first audio)
        ("Done . . . Next.", ["Done . . .", "Next."]),
        ("It ends here. «Then» it goes on.", ["It ends here.", "«Then» it goes on."]),
    ],
)
def test_a_mark_standing_alone_after_a_sentence_end_stays_with_that_sentence(
    text: str, expected: list[str]
) -> None:
    assert _every_way(text) == [expected] * 3
