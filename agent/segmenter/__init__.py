"""Streaming sentence segmenter: LLM token deltas in, speakable TTS segments out.

Two incremental stages, each a cursor that only moves forward over a small buffer:

1. ``text_filter.TextFilter``: markdown to plain text with break and code-span marks.
2. ``sentences.SentenceCutter``: that text to segments at sentence ends, breaks, an eager first
   clause and a length cap.

Every decision is a function of the text alone, so the segments never depend on how the
stream was sliced. Rules and options: ``docs/segmenter.md``.
"""

from __future__ import annotations

from agent.segmenter.sentences import SentenceCutter
from agent.segmenter.text_filter import TextFilter

__all__ = ["SentenceSegmenter"]


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
        self.sentences = SentenceCutter(
            max_chars=max_chars,
            eager_min_words=eager_min_words,
            merge_under_words=merge_under_words,
        )
        self.text_filter = TextFilter(code_block_phrase=code_block_phrase)

    def reset(self) -> None:
        """Forget the reply in progress."""
        self.text_filter.reset()
        self.sentences.reset()

    def push(self, delta: str) -> list[str]:
        """Feed the next slice of the reply; return the segments it completes."""
        if not delta:
            return []
        return self.sentences.push(self.text_filter.push(delta))

    def flush(self) -> list[str]:
        """End the reply: return the remaining segments, then reset for the next reply."""
        return self.sentences.flush(self.text_filter.flush())
