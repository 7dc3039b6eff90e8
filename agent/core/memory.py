"""What a conversation keeps of a turn: the assistant text the user heard, and no more.

A turn records what it sent as audio (``Spoken``: each segment's text, its samples, its word
timings when they were asked for). When a turn is cut off (a superseding prompt, ``cancel``,
the page's Stop, a barge-in by voice), or the client reports that it stopped playing before the
end (``heard``), ``remember`` rewrites the turn's messages in the strands ``Agent``'s history:
the user's prompt, the tool exchanges that completed, then one assistant message with the text
heard followed by ``INTERRUPTED_NOTE``. A playback position maps to text by the segment's word
timings, or, without them, in proportion to the segment's characters. Design: docs/agent.md,
"What the conversation remembers".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tts_protocol import Word, samples_ms

if TYPE_CHECKING:  # the turn imports this module, also where strands is not installed
    from strands.types.content import ContentBlock, Message, Messages

INTERRUPTED_NOTE = "[cut off here: the user did not hear the rest of this reply]"
NOTHING_HEARD_NOTE = "[cut off before the user heard any of this reply]"

_WORD = re.compile(r"\S+")


@dataclass(slots=True)
class SpokenSegment:
    """One segment of a turn as the client got it."""

    text: str
    samples: int = 0  # audio sent so far
    words: list[Word] = field(default_factory=list)
    ended: bool = False  # all its audio was sent
    aside: bool = False  # the service's words (a tool's filler), not the model's: never heard

    @property
    def sent_ms(self) -> float:
        return samples_ms(self.samples)

    def heard(self, ms: float | None) -> str:
        """Its text up to ``ms`` into its audio (None: as far as its audio was sent)."""
        if self.samples == 0:
            return ""
        if ms is None or ms >= self.sent_ms:  # the client cannot have played what never came
            if self.ended or not self.words:  # without timings, audio begun counts in full
                return self.text
            ms = self.sent_ms
        if self.words:
            played = (word for word in self.words if (word.start_ms + word.end_ms) / 2 <= ms)
            cut = _after_words(self.text, played)
            if cut is not None:
                return self.text[:cut]
        return _in_proportion(self.text, ms / self.sent_ms)


def _after_words(text: str, words: Iterable[Word]) -> int | None:
    """Where the last of ``words`` ends in ``text`` (they are found in order), 0 for none; None
    if one is not in the text (the timings name words the text does not spell out)."""
    end = 0
    lowered = text.lower()
    for word in words:
        found = lowered.find(word.text.lower(), end)
        if found < 0:
            return None
        end = found + len(word.text)
    return end


def _in_proportion(text: str, fraction: float) -> str:
    """The words of ``text`` whose middle lies within its first ``fraction`` of characters."""
    limit = fraction * len(text)
    end = 0
    for match in _WORD.finditer(text):
        if (match.start() + match.end()) / 2 > limit:
            break
        end = match.end()
    return text[:end]


class Spoken:
    """What a turn sent to the client as audio, segment by segment."""

    def __init__(self) -> None:
        self.segments: dict[int, SpokenSegment] = {}

    def said(self, seq: int, text: str, *, aside: bool = False) -> None:
        self.segments[seq] = SpokenSegment(text, aside=aside)

    def timed(self, seq: int, words: Iterable[Word]) -> None:
        self.segments[seq].words.extend(words)

    def sounded(self, seq: int, samples: int) -> None:
        self.segments[seq].samples += samples

    def ended(self, seq: int) -> None:
        self.segments[seq].ended = True

    def heard(self, seq: int | None = None, ms: float | None = None) -> str:
        """The model's text heard when playback stopped ``ms`` into segment ``seq`` (None: as far
        as its audio was sent); with no ``seq``, all the audio that was sent. Asides are left
        out: the model did not say them."""
        texts = []
        for number in sorted(self.segments):
            segment = self.segments[number]
            if seq is not None and number > seq:
                break
            if not segment.aside:
                texts.append(segment.heard(ms if number == seq else None))
        return " ".join(text for text in texts if text)


def remember(messages: Messages, base: int, prompt: str, heard: str) -> None:
    """Rewrite ``messages[base:]``, one turn's, to what the user heard of it.

    Kept: the user's prompt, each tool exchange that completed (a tool use whose every result
    came back; their text is dropped, since the text heard says what was said), and one
    assistant message: ``heard`` marked with ``INTERRUPTED_NOTE``. Dropped: a half tool call,
    a partial assistant message. The roles alternate, as every model API requires.
    """
    turn = messages[base:]
    if turn and turn[0]["role"] == "user":
        kept: Messages = [turn[0]]
        rest = turn[1:]
    else:  # cut before strands recorded the prompt
        kept, rest = [{"role": "user", "content": [{"text": prompt}]}], turn
    for use, result in zip(rest[::2], rest[1::2], strict=False):
        if not _answered(use, result):
            break
        kept += [{"role": "assistant", "content": _without_text(use["content"])}, result]
    note = f"{heard} {INTERRUPTED_NOTE}" if heard else NOTHING_HEARD_NOTE
    kept.append({"role": "assistant", "content": [{"text": note}]})
    messages[base:] = kept


def _answered(use: Message, result: Message) -> bool:
    """Is ``use`` an assistant's tool call whose every result ``result`` holds?"""
    if use["role"] != "assistant" or result["role"] != "user":
        return False
    asked = _ids(use["content"], "toolUse")
    return bool(asked) and asked <= _ids(result["content"], "toolResult")


def _ids(content: list[ContentBlock], kind: str) -> set[str]:
    blocks: list[Any] = [block[kind] for block in content if kind in block]  # type: ignore[literal-required]
    return {block["toolUseId"] for block in blocks}


def _without_text(content: list[ContentBlock]) -> list[ContentBlock]:
    return [block for block in content if "text" not in block]


def turn_start(messages: Messages, anchor: Message | None) -> int | None:
    """Where a turn's messages begin: just after ``anchor``, the last message before the turn
    (None: there was none). None if ``anchor`` is gone (a conversation manager trimmed it)."""
    if anchor is None:
        return 0
    for index in range(len(messages) - 1, -1, -1):
        if messages[index] is anchor:
            return index + 1
    return None
