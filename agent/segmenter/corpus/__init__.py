"""Segmenter corpus: input text, expected segments and options, for tests and the benchmark.

``CASES`` holds the rule cases (``cases.py``, one rule per group) and then the realistic LLM
replies (``replies.py``).
"""

from __future__ import annotations

from agent.segmenter.corpus.cases import (
    ABBREVIATIONS,
    BREAKS,
    CAP,
    CODE_SPANS,
    EAGER,
    ELLIPSES,
    INITIALS,
    LIST_MARKERS,
    MARKDOWN,
    MERGE,
    NUMBERS,
    REFERENCES,
    SENTENCE_ENDS,
    SPOKEN_FORMS,
    Case,
)
from agent.segmenter.corpus.replies import MORE_REPLIES, REPLIES
from agent.segmenter.corpus.tokens import llm_tokens

__all__ = ["CASES", "Case", "llm_tokens"]

CASES: list[Case] = [
    *SENTENCE_ENDS,
    *BREAKS,
    *ABBREVIATIONS,
    *SPOKEN_FORMS,
    *INITIALS,
    *NUMBERS,
    *LIST_MARKERS,
    *ELLIPSES,
    *REFERENCES,
    *CODE_SPANS,
    *MARKDOWN,
    *EAGER,
    *CAP,
    *MERGE,
    *REPLIES,
    *MORE_REPLIES,
]
