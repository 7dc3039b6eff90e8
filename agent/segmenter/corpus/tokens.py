"""LLM-sized slices of a text: how the corpus is streamed into the segmenter."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[\u3000-\u9fff]{1,2}| ?[^\W\d_]{1,10}| ?\d{1,3}| ?[^\w\s]{1,2}|\n+| +|\s|_")


def llm_tokens(text: str) -> list[str]:
    """Slice ``text`` roughly as an LLM tokenizer would (about four characters a token)."""
    return _TOKEN.findall(text)
