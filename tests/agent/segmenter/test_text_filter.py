"""TextFilter on its own: markdown in, plain text with break and code-span marks out."""

from __future__ import annotations

import pytest

from agent.segmenter.text_filter import BLOCK, CODE_OFF, CODE_ON, PARA, TextFilter

# The marks made visible, so that expectations read like the filtered stream.
VISIBLE = str.maketrans({PARA: "¶", BLOCK: "■", CODE_ON: "⟨", CODE_OFF: "⟩"})


def filtered(markdown: str, *, sizes: int = 0, phrase: str = "") -> str:
    """The filter's whole output for ``markdown``, pushed in slices of ``sizes`` (0: at once)."""
    text_filter = TextFilter(code_block_phrase=phrase)
    step = sizes or len(markdown) or 1
    out = [text_filter.push(markdown[i : i + step]) for i in range(0, len(markdown), step)]
    return ("".join(out) + text_filter.flush()).translate(VISIBLE)


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("This is **very** important.", "¶This is very important."),
        ("*quite* __bold__ ~~struck~~", "¶quite bold struck"),
        (
            "so 2 * 3 * 4, 2*3, my_variable_name, ~5 min",
            "so 2 * 3 * 4, 2*3, my_variable_name, ~5 min",
        ),
        ("Escaped \\*stars\\* stay.", "¶Escaped *stars* stay."),
        ("Read [the docs](https://d.example/a_(b)) first.", "¶Read the docs first."),
        ("Here ![a cat](cat.png) sits.", "¶Here a cat sits."),
        ("Brackets [that are not] a link.", "¶Brackets [that are not] a link."),
        ("Stray \x02control\f marks", "¶Stray  control  marks"),
    ],
)
def test_inline_markup(markdown: str, expected: str) -> None:
    assert filtered(markdown) == expected


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("Call `os.path.join()` here.", "¶Call ⟨os.path.join()⟩ here."),
        ("``a`b`` c", "¶⟨a`b⟩ c"),
        ("`never closed\nNext line", "¶⟨never closed⟩ ¶Next line"),
        ("`**not emphasis**`", "¶⟨**not emphasis**⟩"),
    ],
)
def test_code_spans_are_marked_and_kept_verbatim(markdown: str, expected: str) -> None:
    assert filtered(markdown) == expected


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("Line one\nLine two", "¶Line one ¶Line two"),
        ("a sentence that is\nwrapped here.", "a sentence that is wrapped here."),
        ("First\n\nSecond", "¶First ¶Second"),
        ("# Title\nText", "¶■ Title■ ¶Text"),
        ("## Title ##\nText", "¶■ Title ■ ¶Text"),
        ("#hashtag", "¶#hashtag"),
        ("- eggs\n* milk\n+ tea\n• jam", "¶■ eggs ¶■ milk ¶■ tea ¶■ jam"),
        ("1. One\n2) Two", "¶■1. One ¶■2) Two"),
        ("3.14 is pi", "¶3.14 is pi"),
        ("> A quote", "¶A quote"),
        ("Above\n---\nBelow", "¶Above ¶■Below"),
        ("| Ann | 30 |\n|---|---|\n| Bo | 4 |", "¶■ Ann   30  ■ ¶■■ Bo   4  "),
    ],
)
def test_line_structure_becomes_marks(markdown: str, expected: str) -> None:
    assert filtered(markdown) == expected


def test_fenced_code_block_is_skipped_or_replaced_by_the_phrase() -> None:
    markdown = "Look:\n```py\nprint('Hello. World.')\n```\nDone."
    assert filtered(markdown) == "¶Look: ¶■■ ¶Done."
    assert filtered(markdown, phrase="Here is  some code.") == "¶Look: ¶■Here is some code.■ ¶Done."
    assert filtered("~~~\ncode\n~~~~\nDone.") == "¶■■ ¶Done."
    assert filtered("```\ncode\n``` not a close\nstill code") == "¶■■"


@pytest.mark.parametrize("sizes", [1, 2, 3, 7])
@pytest.mark.parametrize(
    "markdown",
    [
        "Read [the docs](https://d.example/a_(b)) **now**.",
        "## Steps\n1. Run `make test`.\n- then ~~not~~ *this*\n\n```\nx\n```\n| a | b |",
        "Escaped \\` tick, ![img](x.png) and [no link](",
    ],
)
def test_output_does_not_depend_on_slicing(markdown: str, sizes: int) -> None:
    assert filtered(markdown, sizes=sizes) == filtered(markdown)


def test_undecided_markup_waits_for_more_text() -> None:
    text_filter = TextFilter(code_block_phrase="")
    assert text_filter.push("Read [the do") == PARA + "Read "
    assert text_filter.push("cs](https://exa") == ""
    assert text_filter.push("mple.com) now **") == "the docs now "
    assert text_filter.push("x") == "x"
    assert text_filter.flush() == ""


def test_flush_ends_open_constructs_and_resets() -> None:
    text_filter = TextFilter(code_block_phrase="")
    assert text_filter.push("```\ncode, never closed") == PARA + BLOCK + BLOCK
    assert text_filter.flush() == ""
    assert text_filter.push("Plain **again**") == PARA + "Plain again"
    assert text_filter.flush() == ""


def test_reset_drops_the_reply_in_progress() -> None:
    text_filter = TextFilter(code_block_phrase="")
    text_filter.push("Inside `a code span")
    text_filter.reset()
    assert text_filter.push("# New") + text_filter.flush() == PARA + BLOCK + " New"


# Mutation survivors pinned (docs/testing.md, the contract tier): each case fails one or more.
@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("###### Six\nText", "¶■ Six■ ¶Text"),  # six hashes are a heading, seven are not
        ("####### Seven\nText", "¶####### Seven ¶Text"),
        ("```\ncode\n``\nstill\n```\nend", "¶■■ end"),  # a shorter fence does not close
        ("| a |\n|---|", "¶■ a  ■ ¶■"),  # a table separator as the reply's last line
        ("|a|b|\n|---|---|\n|1|2|", "¶■a b ■ ¶■■1 2 "),
        ("|-X|\nText", "¶■-X ■ ¶Text"),  # a row with a letter is not a separator
        ("-- \nText", "¶--  ¶Text"),  # two dashes are not a thematic break
        ("--- more\nText", "¶--- more ¶Text"),  # nor are three before a word
        ("---X\nText", "¶---X ¶Text"),
        ("*-*-*\nText", "¶-- ¶Text"),  # a break is one mark repeated, not a mix
        ("Pros - and - cons\n--\nText", "¶Pros - and - cons ¶-- ¶Text"),  # marks counted per line
        ("--\nPros - and - cons", "¶-- ¶Pros - and - cons"),
        ("*\tTab item", "¶■\tTab item"),  # a tab after a bullet makes a list item
        ("123456789. Nine digits", "¶■123456789. Nine digits"),  # nine digits list; ten do not
        ("1234567890. Ten digits", "¶1234567890. Ten digits"),
        ("*", "¶*"),  # a lone star at the end of the reply is said
        ("[link](x", "¶[link](x"),  # a link never closed is text
        ("# Title\n\nPara ##", "¶■ Title■ ¶Para ##"),  # closing hashes only in a heading
        ("# Issue X#\nText", "¶■ Issue X#■ ¶Text"),  # after a space only
        ("# Title #X\nText", "¶■ Title #X■ ¶Text"),  # and only hashes to the line's end
        ("`a` `b`", "¶⟨a⟩ ⟨b⟩"),  # the second span opens again
        ("XXX marks the spot", "¶XXX marks the spot"),  # only backticks and tildes fence
        # a link whose text opens a code span: its "]" is code, and no later "]" jumps
        ("[`a](b) c\nnext ] more ] end", "¶⟨a](b) c⟩ next ] more ] end"),
    ],
)
def test_the_edges_of_each_line_mark(markdown: str, expected: str) -> None:
    assert filtered(markdown) == expected
    assert filtered(markdown, sizes=1) == expected


@pytest.mark.parametrize(
    ("chunks", "released"),
    [
        (["```\ncode\n```\nAfter."], ["¶■■ ¶After.", ""]),  # not held until the reply ends
        (["1. ", "Go"], ["¶■1. ", "Go", ""]),  # a list number is known two characters on
        (["a \\* b"], ["a * b", ""]),
        (["# Title ##\nNext"], ["¶■ Title ■ ¶Next", ""]),
        # a link whose text opens a code span: its "]" is code, and no later "]" jumps
        (["[`a](b) c\n", "abcdefghijk] end"], ["¶⟨a](b) c⟩ ", "abcdefghijk] end", ""]),
    ],
)
def test_text_is_released_as_soon_as_it_is_known(chunks: list[str], released: list[str]) -> None:
    text_filter = TextFilter(code_block_phrase="")
    out = [text_filter.push(chunk) for chunk in chunks] + [text_filter.flush()]
    assert [piece.translate(VISIBLE) for piece in out] == released
