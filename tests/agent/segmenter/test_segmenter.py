"""SentenceSegmenter: the corpus, slicing independence, nothing lost, early release."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.segmenter import SentenceSegmenter
from agent.segmenter.corpus import CASES, Case, llm_tokens

# Markup the segmenter may drop; every other non-space character must reach the output.
MARKUP = frozenset("*_~`#->\\=+•")
# Pieces that meet the rules (and each other) far more often than random characters would.
FRAGMENTS = [
    *"abcXYZ019 .,;:!?…—–\"'()[]*_~`#|>\\-+=\n\t",
    *["Dr.", "Mr.", "St.", "U.S.", "e.g.", "i.e.", "etc.", "a.m.", "Ph.D.", "Jan.", "No.", "J."],
    *["U.S. The", "etc. It", "p.m. Please", "Inc. Then", "J. A. Doe", "e.g. Oh", "Dr. No."],
    *["The", "It", "I", "A", "we", "word", "Hello", "3.14", "v2.1.0", "$3.50", "5:30", "1,000"],
    *[". ", "! ", "? ", "?! ", "...", "… ", ", ", "; ", ": ", " — ", "\n\n", "\r\n", "  "],
    *["- ", "* ", "+ ", "• ", "1. ", "2) ", "# ", "## ", "> ", "---\n", "===\n", "|---|\n"],
    *["| a |", "\n3.5 ", "\n12) ", "\n  - ", "\n#x", "\n\t"],
    *["**", "__", "~~", "``", "***", "2 * 3", "snake_case", "__init__", "\\*", "\\"],
    *["```", "```py\n", "~~~\n", "[link](http://a.b/c_(d))", "![img](x.png)", "[x]", "]("],
    *["https://x.com/a.b?c=d", "jo.doe@ex.com", "config.yaml", "。", "！", "你好", "「好。」"],
]
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join)
# Without the constructs that drop more than markup: links, tables and fenced code blocks.
lossless_texts = (
    st.lists(st.sampled_from([f for f in FRAGMENTS if not {"[", "|"} & set(f)]), max_size=60)
    .map("".join)
    .filter(lambda text: "```" not in text and "~~~" not in text)
)
options = st.fixed_dictionaries(
    {
        "max_chars": st.sampled_from([20, 33, 350]),
        "eager_min_words": st.sampled_from([None, 1, 4]),
        "merge_under_words": st.sampled_from([0, 2, 3]),
        "code_block_phrase": st.sampled_from(["", "Here is some code."]),
    }
)


def feed(text: str, cuts: list[int], **opts: Any) -> list[str]:
    """Segments of ``text`` pushed in slices of the given lengths (the rest in one slice)."""
    seg = SentenceSegmenter(**opts)
    out, pos = [], 0
    for size in cuts:
        out += seg.push(text[pos : pos + size])
        pos += size
    return out + seg.push(text[pos:]) + seg.flush()


def speakable(text: str) -> str:
    """The characters that must survive segmentation, in order."""
    return "".join(c for c in text if not c.isspace() and c not in MARKUP)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.group}: {c.text[:48]!r}" for c in CASES])
def test_corpus(case: Case) -> None:
    expected = list(case.expected)
    assert feed(case.text, [], **case.options) == expected
    assert feed(case.text, [1] * len(case.text), **case.options) == expected
    assert feed(case.text, list(map(len, llm_tokens(case.text))), **case.options) == expected
    cuts = random.Random(case.text).choices(range(1, 9), k=len(case.text))
    assert feed(case.text, cuts, **case.options) == expected
    for cut in range(1, len(case.text)):
        assert feed(case.text, [cut], **case.options) == expected, cut


def test_corpus_covers_every_rule() -> None:
    groups = Counter(case.group for case in CASES)
    assert len(CASES) >= 150
    assert groups["reply"] >= 15
    assert all(count >= 5 for count in groups.values()), groups


def test_llm_tokens_cover_the_text() -> None:
    for case in CASES:
        assert "".join(llm_tokens(case.text)) == case.text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, opts=options, data=st.data())
def test_slicing_does_not_change_segments(
    text: str, opts: dict[str, Any], data: st.DataObject
) -> None:
    whole = feed(text, [], **opts)
    cuts = data.draw(st.lists(st.integers(1, 9), max_size=len(text)))
    assert feed(text, cuts, **opts) == whole
    assert feed(text, [1] * len(text), **opts) == whole
    for segment in whole:
        assert segment
        assert segment == segment.strip()
        assert len(segment) <= opts["max_chars"]
        assert not set(segment) & set("\n\f\x02\x03")


@settings(max_examples=400, deadline=None)
@given(text=lossless_texts, opts=options)
def test_nothing_is_lost(text: str, opts: dict[str, Any]) -> None:
    assert speakable("".join(feed(text, [], **opts))) == speakable(text)


def test_boundary_released_at_next_character() -> None:
    seg = SentenceSegmenter()
    assert seg.push("Hello there.") == []
    assert seg.push("  ") == []
    assert seg.push("W") == ["Hello there."]
    assert SentenceSegmenter().push("Hello there. W") == ["Hello there."]


@pytest.mark.parametrize("mark", ["!", "?", "?!", "!!!"])
def test_exclamation_and_question_release_on_whitespace(mark: str) -> None:
    seg = SentenceSegmenter()
    assert seg.push(f"Is that all{mark}") == []
    assert seg.push(" ") == [f"Is that all{mark}"]


@pytest.mark.parametrize("mark", ["?)", '!"', "?”"])
def test_closer_after_question_waits_for_the_next_word(mark: str) -> None:
    seg = SentenceSegmenter()
    assert seg.push(f"Is that all{mark} ") == []
    assert seg.push("she") == []
    assert seg.push(" said. N") == [f"Is that all{mark} she said."]
    assert SentenceSegmenter().push(f"Is that all{mark} No") == [f"Is that all{mark}"]


def test_newline_after_exclamation_releases_at_once() -> None:
    assert SentenceSegmenter().push("That is great!\n") == ["That is great!"]


def test_ambiguous_abbreviation_waits_for_the_next_word() -> None:
    seg = SentenceSegmenter()
    assert seg.push("She moved to the U.S. Th") == []
    assert seg.push("e weather") == ["She moved to the U.S."]
    assert seg.push(". The U.S. Senate") == ["The weather."]
    assert seg.flush() == ["The U.S. Senate"]


def test_eager_fragment_released_at_the_clause_mark() -> None:
    seg = SentenceSegmenter()
    assert seg.push("Well, that is a good question,") == []
    assert seg.push(" and") == ["Well, that is a good question,"]
    assert seg.push(" here is why, in short. Later, clauses stay") == ["and here is why, in short."]
    assert seg.flush() == ["Later, clauses stay"]


def test_long_sentence_is_released_at_the_cap() -> None:
    seg = SentenceSegmenter(max_chars=30, eager_min_words=None)
    out = []
    for token in llm_tokens("one two three four five six seven eight nine ten eleven"):
        out += seg.push(token)
    assert out == ["one two three four five six"]
    assert seg.flush() == ["seven eight nine ten eleven"]


def test_flush_resets_for_the_next_reply() -> None:
    seg = SentenceSegmenter()
    assert seg.push("```\ncode, without end. `x") == []
    assert seg.flush() == []
    assert seg.push("Well, that was a first reply, wasn't it? ") == [
        "Well, that was a first reply,",
        "wasn't it?",
    ]
    assert seg.flush() == []
    assert seg.push("Well, this is the second reply, ") == ["Well, this is the second reply,"]


def test_reset_drops_the_pending_reply() -> None:
    seg = SentenceSegmenter()
    seg.push("Half a sent")
    seg.reset()
    assert seg.push("New reply. ") == []
    assert seg.flush() == ["New reply."]


def test_empty_and_blank_input() -> None:
    seg = SentenceSegmenter()
    assert seg.push("") == []
    assert seg.push("  \n\n ") == []
    assert seg.flush() == []


@pytest.mark.parametrize(
    "opts", [{"max_chars": 19}, {"eager_min_words": 0}, {"eager_min_words": -1}]
)
def test_invalid_options(opts: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        SentenceSegmenter(**opts)
