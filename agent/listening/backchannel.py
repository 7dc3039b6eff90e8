"""Backchannels: what a user says over a reply without taking the turn ("mm-hm", "okay").

A hands-free utterance over a reply pauses it; its transcript decides: nothing but words of the
list (``ListeningConfig.backchannels``), or nothing at all, and the reply plays on; any other
word, and the reply is cut and the words are the next prompt (docs/listening.md, "False
interruptions"). Words are compared in lower case, hyphens as spaces and punctuation dropped,
so "Mm-hmm." is "mm" then "hmm", and an entry of two words ("i see") matches them in a row.

A murmur ("mm-hm", "hmm": voiced, the mouth closed) is what tiny.en reads worst: "Memo.", "And
then I came.", "Damn.". Over a paused reply, an utterance Whisper reads unsure is read again
after ``MURMUR_PROMPT``, and that reading is its transcript only if it is ``only_murmurs``,
and so is Whisper's reading after the prompt with its timestamps (``agent.listening.whisper``):
the prompt names murmurs and short commands alike, so that it leans to neither, and a reading
after it stands only as a closed mouth's murmurs.
"""

from __future__ import annotations

import re

NOT_A_LETTER = re.compile(r"[^a-z' ]+")
# A closed mouth's murmurs as Whisper spells them: not "hmm" alone, which a breathy "hey" reads
# as after the prompt, nor "yeah" or "oh" (docs/listening.md, "False interruptions")
MURMURS = ("mm", "mmm", "mhm", "mmhm", "mmhmm", "mm hmm", "uh huh")
MURMUR_PROMPT = "Hmm. Mm-hmm. Stop. Yeah. No, wait."  # docs/listening.md, "False interruptions"


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


def only_murmurs(text: str) -> bool:
    """Whether ``text`` has a word and every word is a murmur's (``MURMURS``)."""
    return bool(words(text)) and only_backchannel(text, MURMURS)
