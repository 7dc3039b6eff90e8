"""Backchannels: what a user says over a reply without taking the turn ("mm-hm", "okay").

A hands-free utterance over a reply pauses it; its transcript decides: nothing but words of the
list (``ListeningConfig.backchannels``), or nothing at all, and the reply plays on; any other
word, and the reply is cut and the words are the next prompt (docs/listening.md, "False
interruptions"). Words are compared in lower case, hyphens as spaces and punctuation dropped,
so "Mm-hmm." is "mm" then "hmm", and an entry of two words ("i see") matches them in a row.
"""

from __future__ import annotations

import re

NOT_A_LETTER = re.compile(r"[^a-z' ]+")


def words(text: str) -> tuple[str, ...]:
    """``text``'s words, lower case, hyphens as spaces, punctuation dropped."""
    return tuple(NOT_A_LETTER.sub(" ", text.lower().replace("-", " ")).split())


def only_backchannel(text: str, backchannels: tuple[str, ...]) -> bool:
    """Whether ``text`` is nothing but entries of ``backchannels`` one after another (or no
    word at all)."""
    said = words(text)
    entries = {words(entry) for entry in backchannels} - {()}
    reached = [True] + [False] * len(said)  # reached[i]: said[:i] is all entries
    for start in range(len(said)):
        if reached[start]:
            for entry in entries:
                if said[start : start + len(entry)] == entry:
                    reached[start + len(entry)] = True
    return reached[-1]
