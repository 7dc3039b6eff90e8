"""Stage 2: filtered text to segments, at sentence ends, breaks, an eager clause or a length cap.

The input is the text filter's output: plain text with break marks (``PARA``, ``BLOCK``) and
code-span marks (``CODE_ON``/``CODE_OFF``). A cursor jumps from one interesting character
(terminator, clause mark, mark) to the next and decides there. When the evidence for a decision
has not arrived yet (the character after a period, the word after an ambiguous abbreviation)
the cutter stops and retries on the next push; at flush the end of the text is the evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.segmenter.text_filter import BLOCK, BREAKS, CODE_MARKS, CODE_OFF, CODE_ON

# --- characters ----------------------------------------------------------------------------

CJK_TERMINATORS = "。！？"  # noqa: RUF001
TERMINATORS = ".!?…" + CJK_TERMINATORS
CLOSERS = "\"'”’»)]}」』）】"  # noqa: RUF001 - may follow a terminator inside the sentence it ends
OPENERS = "\"'“‘«([{¿¡「『（【"  # noqa: RUF001 - may precede the first word of a sentence
CLAUSE_MARKS = ",;:—–，；：、"  # noqa: RUF001
SPACED_CLAUSE_MARKS = ",;:–"  # noqa: RUF001 - clause boundaries only before whitespace
MARKS = TERMINATORS + CLAUSE_MARKS + CLOSERS  # belong to the word before them
SPACED_MARKS = frozenset(MARKS) - frozenset(OPENERS)  # belong to it after a space too ("Quoi ?")
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
WITHOUT_CODE_MARKS = str.maketrans("", "", CODE_MARKS)

# --- abbreviations (lower case, without the final period) --------------------------------------


def _table(words: str) -> frozenset[str]:
    """A lookup table from space-separated words."""
    return frozenset(words.split())


# Never end a sentence: a name or an example always follows.
NEVER_FINAL = _table(
    "mr mrs ms mx messrs mme mlle dr prof rev hon gen col capt lt sgt maj adm cmdr gov sen rep "
    "pres supt e.g i.e cf vs viz approx ca incl esp"
)
# End a sentence only when a common sentence opener follows ("in the U.S. The ...").
MAYBE_FINAL = _table(
    "etc inc ltd co corp llc plc bros jr sr esq st ave blvd rd mt ft dept univ assn al est min "
    "mins hr hrs sec secs oz lb lbs sq avg misc govt intl a.m p.m ph.d m.d b.a m.a b.sc m.sc "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)
# Not final when a number follows ("No. 5", "Fig. 3", "pp. 10", "Apt. 4B", "ext. 204").
BEFORE_NUMBER = _table(
    "no nos nr vol vols fig figs eq eqs ch chap sec art op pp p pt ex apt ste ext rm bldg tel"
)
# Capitalised words that commonly open a sentence; they decide the MAYBE_FINAL cases.
STARTERS = _table(
    "A An The This That These Those It Its I We You He She They There Here My Our Your His Her "
    "Their In On At For From With By As If When While After Before Since Because But And Or So "
    "Yet Then Now Also However Still Thus Therefore Today Some Many Most All Each Every Both No "
    "Yes Please Let Note What Why How Where Who Which Do Does Did Is Are Was Were Can Could Would "
    "Should Once During Meanwhile Finally First Next Overall Instead Otherwise Although Though "
    "Even Only Other Another Such"
)
LONGEST_STARTER = max(map(len, STARTERS))
LIST_CONTEXT = frozenset(":" + TERMINATORS) | {""}  # before an inline "1." marker

# --- regular expressions -----------------------------------------------------------------------

SEGMENT_SPECIAL = re.compile(rf"[{re.escape(TERMINATORS + CLAUSE_MARKS + BREAKS + CODE_ON)}]")
CODE_SPECIAL = re.compile(rf"[{BREAKS}{CODE_OFF}]")
WORD_BEFORE = re.compile(r"\S*\Z")
LETTERS = re.compile(r"[^\W\d_]+")
INITIALS = re.compile(r"[A-Z]|(?:[A-Za-z]\.)+[A-Za-z]")  # "J", "U.S", "a.m"
WORDS = re.compile(rf"[{CJK}]|[^\s{CJK}]*\w[^\s{CJK}]*")  # a CJK character counts as a word
SENTENCE_END = re.compile(rf"[{re.escape(TERMINATORS)}][{re.escape(CLOSERS)}]*\Z")
LAST_SPACE = re.compile(r"[\s\S]*\s")
TOKEN = re.compile(r"\S+")


def _speakable(text: str) -> str:
    """Speakable form of filtered text: marks dropped, whitespace collapsed."""
    return " ".join(text.translate(WITHOUT_CODE_MARKS).split())


def _count_words(text: str) -> int:
    """Words in ``text``; each CJK character counts as one."""
    return len(WORDS.findall(text))


@dataclass(slots=True)
class CutterState:
    """The segment in progress and how far the cutter has decided it."""

    text: str = ""  # filtered text from the start of the current segment: the segment, lookahead
    cursor: int = 0  # index in ``text``: everything before it is decided
    at_segment_start: bool = True  # the segment's leading whitespace is still to be dropped
    in_code: bool = False  # the cursor is inside a code span
    clause_end: int = 0  # index in ``text`` just past the latest clause boundary; 0 for none
    first_emitted: bool = False  # the reply's first segment is out: no more eager clause cuts
    ended: bool = False  # the whole reply has arrived: nothing more to wait for


class SentenceCutter:
    """Cuts filtered text into segments: ``push`` returns those a slice completes."""

    def __init__(
        self, *, max_chars: int, eager_min_words: int | None, merge_under_words: int
    ) -> None:
        """Options as for ``SentenceSegmenter``; ``ValueError`` when out of range."""
        if max_chars < 20:
            raise ValueError("max_chars must be at least 20")
        if eager_min_words is not None and eager_min_words < 1:
            raise ValueError("eager_min_words must be at least 1, or None")
        self.max_chars = max_chars
        self.eager_min_words = eager_min_words
        self.merge_under_words = merge_under_words
        self.reset()

    def reset(self) -> None:
        """Forget the reply in progress."""
        self._state = CutterState()

    def flush(self, filtered: str) -> list[str]:
        """End the reply with its last ``filtered`` text: return the remaining segments, then
        reset for the next reply."""
        state = self._state
        state.ended = True
        out = self.push(filtered)
        tail = _speakable(state.text)
        if tail:
            out.append(tail)
        self.reset()
        return out

    def push(self, filtered: str) -> list[str]:
        """Add the next slice of filtered text; return the segments it completes."""
        state, limit = self._state, self.max_chars
        state.text += filtered
        out: list[str] = []
        while True:
            if state.at_segment_start:
                rest = state.text.lstrip()
                state.cursor = max(0, state.cursor - (len(state.text) - len(rest)))
                state.text = rest
                if not rest:
                    return out
                state.at_segment_start = False
            text, size = state.text, len(state.text)
            special = CODE_SPECIAL if state.in_code else SEGMENT_SPECIAL
            match = special.search(text, state.cursor, min(size, limit))
            if match is None:
                state.cursor = min(size, limit)
                if size <= limit:
                    return out
                cut = self._cap_point()
                if cut is None:
                    return out
                self._cut(cut, out)
                continue
            at = match.start()
            char = text[at]
            if char in BREAKS:
                state.in_code = False
                state.cursor = at + 1
                if char == BLOCK or not self._holds(at):
                    self._cut(at, out)
                continue
            if char in CODE_MARKS:
                state.in_code = char == CODE_ON
                state.cursor = at + 1
                continue
            found = self._sentence_end(at) if char in TERMINATORS else self._clause_end(at)
            if found is None:
                state.cursor = at
                return out
            end, is_boundary = found
            if end > limit:  # punctuation running past the cap: cut before it first
                state.cursor = at
                cut = self._cap_point()
                if cut is None:
                    return out
                self._cut(cut, out)
                continue
            state.cursor = end
            if not is_boundary:
                continue
            if char in TERMINATORS:
                if not self._holds(end):
                    self._cut(end, out)
            elif not state.first_emitted and self._eager(end):
                self._cut(end, out)
            else:
                state.clause_end = end

    def _cut(self, end: int, out: list[str]) -> None:
        """Emit ``text[:end]`` as a segment (unless it is empty) and start the next one."""
        state = self._state
        segment = _speakable(state.text[:end])
        if segment:
            out.append(segment)
            state.first_emitted = True
        state.text = state.text[end:]
        state.cursor = max(0, state.cursor - end)
        state.clause_end = max(0, state.clause_end - end)
        state.at_segment_start = True

    def _holds(self, end: int) -> bool:
        """A short sentence waits to be said together with the next one."""
        segment = _speakable(self._state.text[:end])
        return (
            _count_words(segment) < self.merge_under_words
            and SENTENCE_END.search(segment) is not None
        )

    def _eager(self, end: int) -> bool:
        """The first segment may end at a clause mark once it has enough words."""
        words = self.eager_min_words
        return words is not None and _count_words(_speakable(self._state.text[:end])) >= words

    def _cap_point(self) -> int | None:
        """Where to cut a segment that reached max_chars: a clause mark, else a space, else
        max_chars; never where a mark would start the next segment (``_keep_marks``)."""
        state, limit = self._state, self.max_chars
        if state.clause_end * 3 >= limit:
            return self._keep_marks(state.clause_end)
        space = LAST_SPACE.match(state.text, 0, limit + 1)
        return self._keep_marks(space.end() - 1 if space and space.end() > 1 else limit)

    def _keep_marks(self, cut: int) -> int | None:
        """``cut``, or earlier where a mark after it (``.``, ``,``, ``)``; ``?`` after a space)
        would start the next segment without its word: before that word, or before the word's
        last character when it fills the segment alone; None to wait for the character after a
        space."""
        state = self._state
        text = state.text
        char = text[cut : cut + 1]
        marks: str | frozenset[str] = MARKS
        if char.isspace() and char not in BREAKS:
            if cut + 1 == len(text) and not state.ended:
                return None
            char, marks = text[cut + 1 : cut + 2], SPACED_MARKS
        if not char or char not in marks:
            return cut
        word = None  # the last token with a character that is not a mark
        for token in TOKEN.finditer(text, 0, cut):
            if token.group().strip(MARKS):
                word = token
        if word is None:  # nothing but marks: they are said alone
            return cut
        if word.start() > 0:
            return word.start()
        last = len(word.group().rstrip(MARKS)) - 1  # one enormous word: keep its last character
        return last if last > 0 else cut

    def _clause_end(self, at: int) -> tuple[int, bool] | None:
        """(end, is a clause boundary) for the clause mark at ``at``; None to wait."""
        text, size = self._state.text, len(self._state.text)
        mark = text[at]
        end = at + 1
        while end < size and (text[end] in CLOSERS or (mark == "—" and text[end] == "—")):
            end += 1
        if end == size:
            return None if not self._state.ended else (end, True)
        return end, mark not in SPACED_CLAUSE_MARKS or text[end].isspace()

    def _sentence_end(self, at: int) -> tuple[int, bool] | None:
        """(end, is a sentence boundary) for the terminators at ``at``; None to wait."""
        state = self._state
        text, size, ended = state.text, len(state.text), state.ended
        end = at
        while end < size and text[end] in TERMINATORS:
            end += 1
        run = text[at:end]
        while end < size and text[end] in CLOSERS:
            end += 1
        if end == size:
            return None if not ended else (end, True)
        if any(t in CJK_TERMINATORS for t in run):
            return end, True
        if not text[end].isspace():  # "3.14", "e.g", "example.com", "Yahoo!Mail"
            return end, False
        if ("!" in run or "?" in run) and end == at + len(run):
            return end, True  # no abbreviation ends in "!" or "?"
        word = end  # start of the next word
        while word < size and text[word].isspace() and text[word] not in BREAKS:
            word += 1
        while word < size and text[word] in OPENERS:
            word += 1
        if word == size:
            return None if not ended else (end, True)
        if text[word] in BREAKS:
            return end, True
        if text[word] in TERMINATORS and word > end:  # "Really. !": the mark is this sentence's
            return end, False
        if run != ".":  # an ellipsis, or "?" / "!" before a closer: "(maybe?) not"
            return end, not text[word].islower()
        ends = self._period_ends(at, word)
        return None if ends is None else (end, ends)

    def _period_ends(self, at: int, word: int) -> bool | None:
        """Whether the period at ``at`` ends a sentence, the next word starting at ``word``."""
        text = self._state.text
        first = text[word]
        if first.islower():
            return False
        before = WORD_BEFORE.search(text, max(0, at - 40), at)
        start = before.start() if before else at
        abbreviation = text[start:at].translate(WITHOUT_CODE_MARKS).strip(OPENERS + CLOSERS)
        key = abbreviation.lower()
        initials = INITIALS.fullmatch(abbreviation) is not None
        if first.isdigit():
            known = key in NEVER_FINAL or key in MAYBE_FINAL or key in BEFORE_NUMBER
            return not (known or initials or abbreviation.isdigit())
        if key in NEVER_FINAL:
            return False
        if abbreviation.isdigit() and len(abbreviation) <= 3:
            before_number = text[:start].rstrip()[-1:]
            if before_number in LIST_CONTEXT:  # "1. Open the file", "Steps: 1. Open ..."
                return False
        if key in MAYBE_FINAL or initials:
            return self._opens_sentence(word)
        return True

    def _opens_sentence(self, word: int) -> bool | None:
        """Whether the word at ``word`` is a common sentence opener; None to wait."""
        text, size = self._state.text, len(self._state.text)
        letters = LETTERS.match(text, word)
        if letters is None:
            return False
        end = letters.end()
        if end == size and not self._state.ended:
            return None if end - word <= LONGEST_STARTER else False
        return letters.group() in STARTERS and text[end : end + 1] != "."
