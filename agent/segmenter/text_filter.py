"""Stage 1: streamed LLM markdown to speakable plain text, incrementally.

Markup is dropped (emphasis, heading and bullet marks, link targets, backticks, fenced code
blocks). Line structure becomes break marks (``PARA``, ``BLOCK``) and inline code spans are
wrapped in ``CODE_ON``/``CODE_OFF``, so that the sentence stage knows where it may cut and
where it may not. When the markup at the cursor cannot be decided yet (a run of backticks, a
link that may still close) the filter stops there and resumes on the next push; at flush the
end of the text decides. The output never depends on how the markdown was sliced.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

# --- marks in the filtered text, for the sentence stage -------------------------------------

PARA = "\n"  # a line or paragraph break: a held short sentence may still merge across it
BLOCK = "\f"  # a list item, heading, table row or code block: always ends the segment
CODE_ON = "\x02"  # start of an inline code span: no boundary inside it
CODE_OFF = "\x03"  # end of an inline code span
BREAKS = PARA + BLOCK
CODE_MARKS = CODE_ON + CODE_OFF

# --- markdown syntax -------------------------------------------------------------------------

ESCAPABLE = frozenset(string.punctuation)
LINE_GAP = ("", " ", "\t", "\r", "\n")  # what may follow a list or heading mark
INLINE_SPECIAL = re.compile(r"[\n*_~`\[\]!\\|#\x02\x03\f]")
CODE_SPAN_SPECIAL = re.compile(r"[\n`]")
LINK = re.compile(r"\[([^\]\n]{0,200})\]\((?:[^()\s]|\([^()\s]*\)){0,500}\)")
LINK_PREFIX = re.compile(r"\[[^\]\n]{0,200}(?:\](?:\((?:[^()\s]|\([^()\s]*\)?){0,500})?)?")


@dataclass(slots=True)
class FilterState:
    """How far the filter has read into one reply, and the open constructs there."""

    pending: str = ""  # markdown from one character before the cursor (context) onwards
    cursor: int = 0  # index in ``pending`` of the next character to filter
    at_line_start: bool = True  # the cursor is at the start of a line
    line_broken: bool = False  # a break mark was already sent for the current line
    fence: str = ""  # the opening fence while inside a fenced code block
    code_ticks: int = 0  # backticks that opened the current code span; 0 outside one
    in_heading: bool = False
    in_table_row: bool = False
    link_text_end: int = -1  # index in ``pending`` of the "]" that ends a link's text; -1: none
    link_end: int = -1  # index in ``pending`` just past the link's ")"
    ended: bool = False  # the whole reply has arrived: nothing more to wait for


def _copy_until(special: re.Pattern[str], text: str, pos: int, out: list[str]) -> int:
    """Copy ``text[pos:]`` up to the next ``special`` match into ``out``; its index, or the end."""
    match = special.search(text, pos)
    stop = match.start() if match else len(text)
    if stop > pos:
        out.append(text[pos:stop])
    return stop


def _is_markup(before: str, after: str) -> bool:
    """An emphasis run is markup unless it stands between spaces or inside a word."""
    if before.isspace() and after.isspace():
        return False
    return not (before.isalnum() and after.isalnum())


def _content_from(state: FilterState, start: int) -> int:
    """The line's content begins at ``start``, after its mark if it had one."""
    state.at_line_start = False
    return start


class TextFilter:
    """Turns a streamed markdown reply into plain text with break and code marks."""

    def __init__(self, *, code_block_phrase: str) -> None:
        """``code_block_phrase``: said in place of a fenced code block ("": skip it)."""
        self.code_block_phrase = " ".join(code_block_phrase.split())
        self.reset()

    def reset(self) -> None:
        """Forget the reply in progress."""
        self._state = FilterState()

    def flush(self) -> str:
        """End the reply: return the rest of its text, then reset for the next reply."""
        self._state.ended = True
        text = self.push("")
        self.reset()
        return text

    def push(self, markdown: str) -> str:
        """Filter the next slice of the reply; return the text it completes."""
        state = self._state
        text = state.pending + markdown
        pos, size = state.cursor, len(text)
        out: list[str] = []
        while pos < size:
            if state.fence:
                if state.at_line_start:
                    nxt = self._fence_line_start(text, pos)
                else:  # the rest of a code line is skipped
                    newline = text.find("\n", pos)
                    nxt = size if newline < 0 else newline + 1
                    state.at_line_start = newline >= 0
            elif state.at_line_start:
                nxt = self._line_start(text, pos, out)
            elif state.code_ticks:
                nxt = self._code_span(text, pos, out)
            else:
                nxt = self._inline(text, pos, out)
            if nxt is None:
                break
            pos = nxt
        keep = max(pos - 1, 0)
        state.pending, state.cursor = text[keep:], pos - keep
        if state.link_text_end >= 0:
            state.link_text_end -= keep
            state.link_end -= keep
        return "".join(out)

    def _fence_line_start(self, text: str, pos: int) -> int | None:
        """Inside a code block, end it at a closing fence; return where to go on, None to wait."""
        state, size = self._state, len(text)
        fence = state.fence
        end = pos
        while end < size and text[end] in fence[0] + " \t\r":
            end += 1
        if end == size and not state.ended:
            return None
        line = text[pos:end].strip()
        if len(line) >= len(fence) and line == fence[0] * len(line):
            state.fence = "" if text[end : end + 1] in ("", "\n") else fence
        state.at_line_start = False
        return end

    def _line_start(self, text: str, pos: int, out: list[str]) -> int | None:
        """Classify a line by its start; return where its content begins, None to wait."""
        state, size = self._state, len(text)
        start = pos
        while start < size and text[start] in " \t\r":
            start += 1
        if start == size:
            return None if not state.ended else size
        first = text[start]
        if not (state.line_broken or first.islower()):  # a line starting in lower case goes on
            state.line_broken = True
            out.append(PARA)
        if first in "\n>":  # a blank line; or a quote mark, dropped before the line is classified
            return start + 1
        if first in "`~#":
            return self._fence_or_heading(text, start, out)
        if first in "-*_+=|•":
            return self._rule_or_item(text, start, out)
        if first.isdigit():
            return self._numbered_item(text, start, out)
        return _content_from(state, start)

    def _fence_or_heading(self, text: str, start: int, out: list[str]) -> int | None:
        """Three or more backticks or tildes open a code block; one to six ``#`` and a gap, a
        heading. Return where the line goes on, None to wait."""
        state, size, first = self._state, len(text), text[start]
        end = start  # end of the line's leading mark
        while end < size and text[end] == first:
            end += 1
        if end == size and not state.ended:
            return None
        if first != "#" and end - start >= 3:
            state.fence = first * (end - start)
            out.append(BLOCK + self.code_block_phrase + BLOCK)
            return _content_from(state, end)
        if first == "#" and end - start <= 6 and text[end : end + 1] in LINE_GAP:
            state.in_heading = True
            out.append(BLOCK)
            return _content_from(state, end)
        return _content_from(state, start)

    def _rule_or_item(self, text: str, start: int, out: list[str]) -> int | None:
        """A thematic break, setext underline or table separator (the whole line); a bullet or
        a table row. Return where the line goes on, None to wait."""
        state, size, first = self._state, len(text), text[start]
        marks = first + " \t\r" + (":-" if first == "|" else "")
        end = start  # end of the line's leading mark
        while end < size and text[end] in marks:
            end += 1
        if end == size and not state.ended:
            return None
        if text[end : end + 1] in ("", "\n") and (
            (first in "-*_=" and text.count(first, start, end) >= 3)
            or (first == "|" and "-" in text[start:end])
        ):
            out.append(BLOCK)  # thematic break, setext underline or table separator
            return end
        if first in "-*+•|" and (first == "|" or text[start + 1 : start + 2] in (" ", "\t")):
            state.in_table_row = first == "|"
            out.append(BLOCK)
            return _content_from(state, start + 1)
        return _content_from(state, start)

    def _numbered_item(self, text: str, start: int, out: list[str]) -> int | None:
        """An ordered list item ("1." or "1)" and a gap); the number is kept: "1. First step".
        Return where the line goes on, None to wait."""
        state, size = self._state, len(text)
        end = start  # end of the line's digits
        while end < size and text[end].isdigit():
            end += 1
        if end + 2 > size and not state.ended:
            return None
        if (
            end - start <= 9
            and text[end : end + 1] in (".", ")")
            and text[end + 1 : end + 2] in LINE_GAP
        ):
            out.append(BLOCK)
        return _content_from(state, start)

    def _inline(self, text: str, pos: int, out: list[str]) -> int | None:
        """Copy plain text, then handle one markup character; None to wait for more text."""
        state, size = self._state, len(text)
        at = _copy_until(INLINE_SPECIAL, text, pos, out)
        if at == size:
            return size
        wait = at if at > pos else None  # keep the text copied so far, or wait right here
        char = text[at]
        if char == "\n":
            return self._line_end(at, out)
        if char in "*_~`":
            return self._run(text, at, wait, out)
        if char in "[!":
            return self._link_or_bracket(text, at, wait, out)
        if char == "]" and at == state.link_text_end:
            state.link_text_end = -1
            return state.link_end
        return self._character(text, at, wait, out)

    def _line_end(self, at: int, out: list[str]) -> int:
        """A newline ends a heading or table row (``BLOCK``); the next line is classified."""
        state = self._state
        if state.in_heading or state.in_table_row:
            out.append(BLOCK)
        state.in_heading = state.in_table_row = state.line_broken = False
        state.at_line_start = True
        out.append(" ")  # whitespace now, so that "!" / "?" before it is released at once
        return at + 1

    def _run(self, text: str, at: int, wait: int | None, out: list[str]) -> int | None:
        """A run of backticks opens a code span; one of ``*``, ``_`` or ``~`` is dropped where
        it is markup (a single ``~`` is kept)."""
        state, size, char = self._state, len(text), text[at]
        run_end = at
        while run_end < size and text[run_end] == char:
            run_end += 1
        if run_end == size and not state.ended:
            return wait
        if char == "`":
            state.code_ticks = run_end - at
            out.append(CODE_ON)
        elif not _is_markup(
            text[at - 1] if at else "\n", text[run_end] if run_end < size else "\n"
        ) or (char == "~" and run_end - at == 1):
            out.append(text[at:run_end])
        return run_end

    def _link_or_bracket(self, text: str, at: int, wait: int | None, out: list[str]) -> int | None:
        """A link or image keeps its text and drops its target; a bracket that opens none is
        kept."""
        state, size, char = self._state, len(text), text[at]
        bracket = at + (char == "!")
        if bracket == size and not state.ended:
            return wait
        if text.startswith("[", bracket):
            link = LINK.match(text, bracket)
            if link:
                state.link_text_end, state.link_end = link.end(1), link.end()
                return bracket + 1
            if not state.ended and LINK_PREFIX.fullmatch(text, bracket):
                return wait
        out.append(char)
        return at + 1

    def _character(self, text: str, at: int, wait: int | None, out: list[str]) -> int | None:
        """A backslash escape, a heading's closing hashes, a table row's pipe (a space) or a
        stray mark character (a space); any other character is copied."""
        state, size, char = self._state, len(text), text[at]
        if char == "\\":
            if at + 1 == size and not state.ended:
                return wait
            if text[at + 1 : at + 2] in ESCAPABLE:
                out.append(text[at + 1])
                return at + 2
        elif char == "#" and state.in_heading and text[at - 1] in " \t":
            run_end = at
            while run_end < size and text[run_end] in "# \t\r":
                run_end += 1
            if run_end == size and not state.ended:
                return wait
            if run_end == size or text[run_end] == "\n":
                return run_end  # closing hashes of a heading
        elif char == "|" and state.in_table_row:
            char = " "
        elif char in CODE_MARKS + BLOCK:
            char = " "  # stray control characters would pass for marks
        out.append(char)
        return at + 1

    def _code_span(self, text: str, pos: int, out: list[str]) -> int | None:
        """Copy code-span text up to its closing backticks or the end of the line."""
        state, size = self._state, len(text)
        at = _copy_until(CODE_SPAN_SPECIAL, text, pos, out)
        if at == size:
            return size
        if text[at] == "\n":
            state.code_ticks = 0
            out.append(CODE_OFF)
            return at
        run_end = at
        while run_end < size and text[run_end] == "`":
            run_end += 1
        if run_end == size and not state.ended:
            return at if at > pos else None
        if run_end - at == state.code_ticks:
            state.code_ticks = 0
            out.append(CODE_OFF)
        else:
            out.append(text[at:run_end])
        return run_end
