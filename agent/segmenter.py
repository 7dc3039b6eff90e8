"""Streaming sentence segmenter: LLM token deltas in, speakable TTS segments out.

Two incremental stages, each a cursor that only moves forward over a small buffer:

1. Markdown to clean text: markup is dropped (emphasis, heading and bullet marks, link targets,
   backticks, fenced code blocks); line structure becomes break marks (``PARA``, ``BLOCK``) and
   code spans are wrapped in ``CODE_ON``/``CODE_OFF`` so that nothing inside them is cut.
2. Clean text to segments: sentence ends, breaks, an eager first clause and a length cap.

Every decision is a function of the text alone. When the evidence for one has not arrived yet
the stage stops and retries on the next push (at flush the end of text is the evidence), so the
segments never depend on how the stream was sliced. Rules and options: ``docs/segmenter.md``.
"""

from __future__ import annotations

import re
import string

# --- marks passed from the markdown stage to the sentence stage ------------------------------

PARA = "\n"  # a line or paragraph break: a held short sentence may still merge across it
BLOCK = "\f"  # a list item, heading, table row or code block: always ends the segment
CODE_ON = "\x02"  # start of an inline code span: no boundary inside it
CODE_OFF = "\x03"  # end of an inline code span
BREAKS = PARA + BLOCK
NO_CODE_MARKS = str.maketrans("", "", CODE_ON + CODE_OFF)

# --- characters ----------------------------------------------------------------------------

CJK_TERMINATORS = "。！？"  # noqa: RUF001
TERMINATORS = ".!?…" + CJK_TERMINATORS
CLOSERS = "\"'”’»)]}」』）】"  # noqa: RUF001 - may follow a terminator inside the sentence it ends
OPENERS = "\"'“‘«([{¿¡「『（【"  # noqa: RUF001 - may precede the first word of a sentence
CLAUSE_MARKS = ",;:—–，；：、"  # noqa: RUF001
SPACED_CLAUSE_MARKS = ",;:–"  # noqa: RUF001 - clause boundaries only before whitespace
ESCAPABLE = frozenset(string.punctuation)
LINE_GAP = ("", " ", "\t", "\r", "\n")  # what may follow a list mark
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"

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
# Not final when a number follows ("No. 5", "Fig. 3", "pp. 10").
BEFORE_NUMBER = _table("no nos nr vol vols fig figs eq eqs ch chap sec art op pp p pt ex")
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

INLINE_SPECIAL = re.compile(r"[\n*_~`\[\]!\\|#\x02\x03\f]")
CODE_SPAN_SPECIAL = re.compile(r"[\n`]")
LINK = re.compile(r"\[([^\]\n]{0,200})\]\((?:[^()\s]|\([^()\s]*\)){0,500}\)")
LINK_PREFIX = re.compile(r"\[[^\]\n]{0,200}(?:\](?:\((?:[^()\s]|\([^()\s]*\)?){0,500})?)?")
SEGMENT_SPECIAL = re.compile(rf"[{re.escape(TERMINATORS + CLAUSE_MARKS + BREAKS + CODE_ON)}]")
CODE_SPECIAL = re.compile(rf"[{BREAKS}{CODE_OFF}]")
WORD_BEFORE = re.compile(r"\S*\Z")
LETTERS = re.compile(r"[^\W\d_]+")
INITIALS = re.compile(r"[A-Z]|(?:[A-Za-z]\.)+[A-Za-z]")  # "J", "U.S", "a.m"
WORDS = re.compile(rf"[{CJK}]|[^\s{CJK}]*\w[^\s{CJK}]*")  # a CJK character counts as a word
SENTENCE_END = re.compile(rf"[{re.escape(TERMINATORS)}][{re.escape(CLOSERS)}]*\Z")
LAST_SPACE = re.compile(r"[\s\S]*\s")


def _clean(text: str) -> str:
    """Speakable form of a stage-2 slice: marks dropped, whitespace collapsed."""
    return " ".join(text.translate(NO_CODE_MARKS).split())


def _count_words(text: str) -> int:
    """Words in ``text``; each CJK character counts as one."""
    return len(WORDS.findall(text))


def _copy_until(special: re.Pattern[str], raw: str, i: int, out: list[str]) -> int:
    """Copy ``raw[i:]`` up to the next ``special`` match into ``out``; its index, or len(raw)."""
    m = special.search(raw, i)
    k = m.start() if m else len(raw)
    if k > i:
        out.append(raw[i:k])
    return k


def _is_markup(prev: str, nxt: str) -> bool:
    """An emphasis run is markup unless it stands between spaces or inside a word."""
    if prev.isspace() and nxt.isspace():
        return False
    return not (prev.isalnum() and nxt.isalnum())


class SentenceSegmenter:
    """Cuts a streamed LLM reply into speakable segments.

    ``push`` returns the segments a delta completes; ``flush`` ends the reply, returns the rest
    and leaves the segmenter ready for the next reply. ``reset`` drops a reply half-way (for
    example on barge-in).
    """

    def __init__(
        self,
        *,
        max_chars: int = 350,
        eager_min_words: int | None = 4,
        merge_under_words: int = 2,
        code_block_phrase: str = "",
    ) -> None:
        """``max_chars``: longest segment; ``eager_min_words``: words before the first segment
        may end at a clause mark (None: never); ``merge_under_words``: a sentence of fewer
        words waits for the next one (0: never); ``code_block_phrase``: said in place of a
        fenced code block ("": skip it silently)."""
        if max_chars < 20:
            raise ValueError("max_chars must be at least 20")
        if eager_min_words is not None and eager_min_words < 1:
            raise ValueError("eager_min_words must be at least 1, or None")
        self.max_chars = max_chars
        self.eager_min_words = eager_min_words
        self.merge_under_words = merge_under_words
        self.code_block_phrase = " ".join(code_block_phrase.split())
        self.reset()

    def reset(self) -> None:
        """Forget the reply in progress."""
        self._final = False
        # stage 1: raw markdown
        self._raw = ""
        self._ri = 0  # cursor; _raw keeps one character before it
        self._line_start = True
        self._broken = False  # a break was already sent for the current line
        self._fence = ""  # the opening fence while inside a fenced code block
        self._ticks = 0  # backticks that opened the current code span; 0 outside one
        self._heading = False
        self._table = False
        self._link_close = -1  # position of the "]" that ends a link's text
        self._link_end = -1  # position just past the link's ")"
        # stage 2: clean text
        self._buf = ""  # the current segment, then lookahead
        self._bi = 0  # cursor
        self._at_start = True  # the segment's leading whitespace is still to be dropped
        self._code = False  # the cursor is inside a code span
        self._clause = 0  # end of the latest clause boundary in _buf; 0 for none
        self._emitted = 0  # segments emitted in this reply

    def push(self, delta: str) -> list[str]:
        """Feed the next slice of the reply; return the segments it completes."""
        if not delta:
            return []
        self._raw += delta
        self._markdown()
        return self._segments()

    def flush(self) -> list[str]:
        """End the reply: return the remaining segments, then reset for the next reply."""
        self._final = True
        self._markdown()
        out = self._segments()
        tail = _clean(self._buf)
        if tail:
            out.append(tail)
        self.reset()
        return out

    # --- stage 1: markdown to clean text -----------------------------------------------------

    def _markdown(self) -> None:
        """Run stage 1 over the pending raw text, appending clean text to stage 2's buffer."""
        raw, i, n = self._raw, self._ri, len(self._raw)
        out: list[str] = []
        while i < n:
            if self._line_start:
                j = self._line(raw, i, out)
            elif self._fence:  # the rest of a line inside a fenced code block
                k = raw.find("\n", i)
                j = n if k < 0 else k + 1
                self._line_start = k >= 0
            elif self._ticks:
                j = self._code_span(raw, i, out)
            else:
                j = self._inline(raw, i, out)
            if j is None:
                break
            i = j
        self._buf += "".join(out)
        keep = max(i - 1, 0)
        self._raw, self._ri = raw[keep:], i - keep
        if self._link_close >= 0:
            self._link_close -= keep
            self._link_end -= keep

    def _line(self, raw: str, i: int, out: list[str]) -> int | None:
        """Classify a line by its start; return where its content begins, None to wait."""
        n, final = len(raw), self._final
        if self._fence:  # only a closing fence matters; the rest of the line is skipped
            j = i
            while j < n and raw[j] in self._fence[0] + " \t\r":
                j += 1
            if j == n and not final:
                return None
            line = raw[i:j].strip()
            if len(line) >= len(self._fence) and line == self._fence[0] * len(line):
                self._fence = "" if raw[j : j + 1] in ("", "\n") else self._fence
            self._line_start = False
            return j
        j = i
        while j < n and raw[j] in " \t\r":
            j += 1
        if j == n:
            return None if not final else n
        c = raw[j]
        if not (self._broken or c.islower()):  # a line starting in lower case goes on
            self._broken = True
            out.append(PARA)
        if c in "\n>":  # blank line; or a block quote mark, dropped before the line is classified
            return j + 1
        k = j
        if c in "`~#":
            while k < n and raw[k] == c:
                k += 1
            if k == n and not final:
                return None
            if c != "#" and k - j >= 3:
                self._fence = c * (k - j)
                self._line_start = False
                out.append(BLOCK + self.code_block_phrase + BLOCK)
                return k
            if c == "#" and k - j <= 6 and raw[k : k + 1] in LINE_GAP:
                self._heading = True
                self._line_start = False
                out.append(BLOCK)
                return k
        elif c in "-*_+=|•":
            marks = c + " \t\r" + (":-" if c == "|" else "")
            while k < n and raw[k] in marks:
                k += 1
            if k == n and not final:
                return None
            if raw[k : k + 1] in ("", "\n") and (
                (c in "-*_=" and raw.count(c, j, k) >= 3) or (c == "|" and "-" in raw[j:k])
            ):
                out.append(BLOCK)  # thematic break, setext underline or table separator
                return k
            if c in "-*+•|" and (c == "|" or raw[j + 1 : j + 2] in (" ", "\t")):
                self._table = c == "|"
                self._line_start = False
                out.append(BLOCK)
                return j + 1
        elif c.isdigit():
            while k < n and raw[k].isdigit():
                k += 1
            if k + 2 > n and not final:
                return None
            if k - j <= 9 and raw[k : k + 1] in (".", ")") and raw[k + 1 : k + 2] in LINE_GAP:
                self._line_start = False
                out.append(BLOCK)
                return j  # the number is kept: "1. First step"
        self._line_start = False
        return j

    def _inline(self, raw: str, i: int, out: list[str]) -> int | None:
        """Copy plain text, then handle one markup character; None to wait for more text."""
        n = len(raw)
        k = _copy_until(INLINE_SPECIAL, raw, i, out)
        if k == n:
            return n
        wait = k if k > i else None
        final = self._final
        c = raw[k]
        if c == "\n":
            if self._heading or self._table:
                out.append(BLOCK)
            self._heading = self._table = self._broken = False
            self._line_start = True
            out.append(" ")  # whitespace now, so that "!" / "?" before it is released at once
            return k + 1
        if c in "*_~`":
            j = k
            while j < n and raw[j] == c:
                j += 1
            if j == n and not final:
                return wait
            if c == "`":
                self._ticks = j - k
                out.append(CODE_ON)
            elif not (_is_markup(raw[k - 1] if k else "\n", raw[j] if j < n else "\n")) or (
                c == "~" and j - k == 1
            ):
                out.append(raw[k:j])
            return j
        if c in "[!":
            start = k + (c == "!")
            if start == n and not final:
                return wait
            if raw.startswith("[", start):
                link = LINK.match(raw, start)
                if link:
                    self._link_close, self._link_end = link.end(1), link.end()
                    return start + 1
                if not final and LINK_PREFIX.fullmatch(raw, start):
                    return wait
            out.append(c)
            return k + 1
        if c == "]" and k == self._link_close:
            self._link_close = -1
            return self._link_end
        if c == "\\":
            if k + 1 == n and not final:
                return wait
            if raw[k + 1 : k + 2] in ESCAPABLE:
                out.append(raw[k + 1])
                return k + 2
        elif c == "#" and self._heading and raw[k - 1] in " \t":
            j = k
            while j < n and raw[j] in "# \t\r":
                j += 1
            if j == n and not final:
                return wait
            if j == n or raw[j] == "\n":
                return j  # closing hashes of a heading
        elif c == "|" and self._table:
            c = " "
        elif c in CODE_ON + CODE_OFF + BLOCK:
            c = " "  # stray control characters would pass for marks
        out.append(c)
        return k + 1

    def _code_span(self, raw: str, i: int, out: list[str]) -> int | None:
        """Copy code-span text up to its closing backticks or the end of the line."""
        n = len(raw)
        k = _copy_until(CODE_SPAN_SPECIAL, raw, i, out)
        if k == n:
            return n
        if raw[k] == "\n":
            self._ticks = 0
            out.append(CODE_OFF)
            return k
        j = k
        while j < n and raw[j] == "`":
            j += 1
        if j == n and not self._final:
            return k if k > i else None
        if j - k == self._ticks:
            self._ticks = 0
            out.append(CODE_OFF)
        else:
            out.append(raw[k:j])
        return j

    # --- stage 2: clean text to segments ------------------------------------------------------

    def _segments(self) -> list[str]:
        """Run stage 2 as far as the clean text allows; return the segments it completed."""
        out: list[str] = []
        limit = self.max_chars
        while True:
            if self._at_start:
                rest = self._buf.lstrip()
                self._bi = max(0, self._bi - (len(self._buf) - len(rest)))
                self._buf = rest
                if not rest:
                    return out
                self._at_start = False
            buf, i = self._buf, self._bi
            n = len(buf)
            m = (CODE_SPECIAL if self._code else SEGMENT_SPECIAL).search(buf, i, min(n, limit))
            if m is None:
                self._bi = min(n, limit)
                if n <= limit:
                    return out
                self._cut(self._cap_point(), out)
                continue
            i = m.start()
            c = buf[i]
            if c in BREAKS:
                self._code = False
                self._bi = i + 1
                if c == BLOCK or not self._hold(i):
                    self._cut(i, out)
                continue
            if c in CODE_ON + CODE_OFF:
                self._code = c == CODE_ON
                self._bi = i + 1
                continue
            found = self._sentence_end(i) if c in TERMINATORS else self._clause_end(i)
            if found is None:
                self._bi = i
                return out
            end, boundary = found
            if end > limit:  # punctuation running past the cap: cut before it first
                self._bi = i
                self._cut(self._cap_point(), out)
                continue
            self._bi = end
            if not boundary:
                continue
            if c in TERMINATORS:
                if not self._hold(end):
                    self._cut(end, out)
            elif self._emitted == 0 and self._eager(end):
                self._cut(end, out)
            else:
                self._clause = end

    def _cut(self, end: int, out: list[str]) -> None:
        """Emit ``_buf[:end]`` as a segment (unless empty) and start the next one."""
        text = _clean(self._buf[:end])
        if text:
            out.append(text)
            self._emitted += 1
        self._buf = self._buf[end:]
        self._bi = max(0, self._bi - end)
        self._clause = max(0, self._clause - end)
        self._at_start = True

    def _hold(self, end: int) -> bool:
        """A short sentence waits to be said together with the next one."""
        text = _clean(self._buf[:end])
        return _count_words(text) < self.merge_under_words and SENTENCE_END.search(text) is not None

    def _eager(self, end: int) -> bool:
        """The first segment may end at a clause mark once it has enough words."""
        words = self.eager_min_words
        return words is not None and _count_words(_clean(self._buf[:end])) >= words

    def _cap_point(self) -> int:
        """Where to cut a segment that reached max_chars: a clause mark, else a space."""
        limit = self.max_chars
        if self._clause * 3 >= limit:
            return self._clause
        space = LAST_SPACE.match(self._buf, 0, limit + 1)
        return space.end() - 1 if space and space.end() > 1 else limit

    def _clause_end(self, i: int) -> tuple[int, bool] | None:
        """(end, is a clause boundary) for the clause mark at ``i``; None to wait."""
        buf, n = self._buf, len(self._buf)
        c = buf[i]
        j = i + 1
        while j < n and (buf[j] in CLOSERS or (c == "—" and buf[j] == "—")):
            j += 1
        if j == n:
            return None if not self._final else (j, True)
        return j, c not in SPACED_CLAUSE_MARKS or buf[j].isspace()

    def _sentence_end(self, i: int) -> tuple[int, bool] | None:
        """(end, is a sentence boundary) for the terminators at ``i``; None to wait."""
        buf, n, final = self._buf, len(self._buf), self._final
        j = i
        while j < n and buf[j] in TERMINATORS:
            j += 1
        run = buf[i:j]
        while j < n and buf[j] in CLOSERS:
            j += 1
        if j == n:
            return None if not final else (j, True)
        if any(t in CJK_TERMINATORS for t in run):
            return j, True
        if not buf[j].isspace():  # "3.14", "e.g", "example.com", "Yahoo!Mail"
            return j, False
        if ("!" in run or "?" in run) and j == i + len(run):
            return j, True  # no abbreviation ends in "!" or "?"
        k = j
        while k < n and buf[k].isspace() and buf[k] not in BREAKS:
            k += 1
        while k < n and buf[k] in OPENERS:
            k += 1
        if k == n:
            return None if not final else (j, True)
        if buf[k] in BREAKS:
            return j, True
        if run != ".":  # an ellipsis, or "?" / "!" before a closer: "(maybe?) not"
            return j, not buf[k].islower()
        ends = self._period_ends(i, k)
        return None if ends is None else (j, ends)

    def _period_ends(self, i: int, k: int) -> bool | None:
        """Whether the period at ``i`` ends a sentence, the next word starting at ``k``."""
        buf = self._buf
        c = buf[k]
        if c.islower():
            return False
        before = WORD_BEFORE.search(buf, max(0, i - 40), i)
        start = before.start() if before else i
        word = buf[start:i].translate(NO_CODE_MARKS).strip(OPENERS + CLOSERS)
        key = word.lower()
        initials = INITIALS.fullmatch(word) is not None
        if c.isdigit():
            abbreviation = key in NEVER_FINAL or key in MAYBE_FINAL or key in BEFORE_NUMBER
            return not (abbreviation or initials or word.isdigit())
        if key in NEVER_FINAL:
            return False
        if word.isdigit() and len(word) <= 3:
            prev = buf[:start].rstrip()[-1:]
            if prev in LIST_CONTEXT:  # "1. Open the file", "Steps: 1. Open ..."
                return False
        if key in MAYBE_FINAL or initials:
            return self._opens_sentence(k)
        return True

    def _opens_sentence(self, k: int) -> bool | None:
        """Whether the word at ``k`` is a common sentence opener; None to wait."""
        buf, n = self._buf, len(self._buf)
        m = LETTERS.match(buf, k)
        if m is None:
            return False
        end = m.end()
        if end == n and not self._final:
            return None if end - k <= LONGEST_STARTER else False
        return m.group() in STARTERS and buf[end : end + 1] != "."
