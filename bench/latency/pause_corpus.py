"""The pause corpus: sentences said by the project's TTS, whole and with a pause spliced in.

Each sentence of ``SENTENCES`` marks with `` | `` where a speaker might stop to think ("I'd
like a table for | four people tonight."). The embedded engine says the whole sentence once
(its own word timings say where each word starts and ends); the **complete** utterance is that
audio, and the **paused** one is the same audio with ``PAUSES_MS[i % 7]`` (300 to 900 ms) of
silence put in the gap between the two words at the mark. Deterministic: the text lists are
the corpus, no audio is stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from agent.browser_leg import MIC_SAMPLE_RATE
from bench.speech.intelligibility import to_whisper_input

if TYPE_CHECKING:
    from tts_server.engines import Engine

MARK = " | "
PAUSES_MS = (300, 400, 500, 600, 700, 800, 900)
SENTENCES = (
    "I'd like a table for | four people tonight.",
    "My number is five five five | one two three four.",
    "Can you remind me to | call my sister tomorrow?",
    "What is the weather going to be | like in London this weekend?",
    "Please book me a flight to | Boston on Friday morning.",
    "I want to order a large pizza with | mushrooms and olives.",
    "How long does it take to | drive from here to the airport?",
    "Could you tell me the | opening hours of the museum?",
    "Set an alarm for | seven thirty tomorrow morning.",
    "Add milk and eggs and | bread to my shopping list.",
    "What is the capital of | Australia?",
    "Send a message to | my brother saying I will be late.",
    "Play some music by | the Beatles in the living room.",
    "I need a taxi to the | train station in ten minutes.",
    "Turn the temperature up to | twenty two degrees.",
    "Find me a good recipe for | chocolate chip cookies.",
    "My flight leaves at | nine fifteen tonight.",
    "Can you translate | good morning into Spanish?",
    "What time does the | last bus to the city leave?",
    "I would like to cancel my | appointment on Thursday.",
    "Remind me to water the | plants every Sunday.",
    "How many people live in | Tokyo?",
    "Tell me a joke about | cats and dogs.",
    "Schedule a meeting with | Sarah at three this afternoon.",
    "The code for the door is | four eight two six.",
    "Where is the nearest | pharmacy that is open now?",
    "Can you recommend a | good Italian restaurant nearby?",
    "Please turn off the lights in the | bedroom and the kitchen.",
    "What is the difference between | a frog and a toad?",
    "I am looking for a | birthday present for my mother.",
)


@dataclass(frozen=True, slots=True)
class Spoken:
    """A text said by the engine: 16 kHz s16le, and where each word starts and ends (ms)."""

    pcm: bytes
    words: tuple[tuple[float, float], ...]


@dataclass(frozen=True, slots=True)
class PauseItem:
    """One sentence of the corpus: its audio whole, and where the pause goes (ms into it)."""

    text: str
    pcm: bytes
    split_ms: float
    pause_ms: int

    @property
    def paused(self) -> bytes:
        """The same audio with ``pause_ms`` of silence at ``split_ms``."""
        at = int(self.split_ms * MIC_SAMPLE_RATE / 1000) * 2
        return self.pcm[:at] + bytes(self.pause_ms * MIC_SAMPLE_RATE // 1000 * 2) + self.pcm[at:]

    @property
    def resume_ms(self) -> float:
        """Where the speech after the pause starts in ``paused``."""
        return self.split_ms + self.pause_ms


async def say(texts: Iterable[str], engine: Engine | None = None) -> dict[str, Spoken]:
    """Each text said by ``engine`` (default: the embedded one), as 16 kHz s16le, with its word
    timings."""
    if engine is None:
        from tts_server.engines import load_engine
        from tts_server.settings import Settings

        engine = load_engine(Settings())
    scale = 1000 / engine.sample_rate
    spoken = {}
    for text in texts:
        chunks = [chunk async for chunk in engine.synthesize(engine.prepare(text))]
        words, offset = [], 0
        for chunk in chunks:
            words += [((offset + w.start) * scale, (offset + w.end) * scale) for w in chunk.words]
            offset += chunk.audio.size
        samples = to_whisper_input(np.concatenate([c.audio for c in chunks]), engine.sample_rate)
        pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()
        spoken[text] = Spoken(pcm, tuple(words))
    return spoken


def split_ms(text: str, spoken: Spoken) -> float:
    """The middle of the gap between the words either side of ``MARK`` in ``text``."""
    before, after = text.split(MARK)
    count = len(before.split())
    if len(spoken.words) != count + len(after.split()):
        raise ValueError(f"{text!r}: {len(spoken.words)} word timings for its words")
    return round((spoken.words[count - 1][1] + spoken.words[count][0]) / 2, 1)


def texts(count: int = len(SENTENCES)) -> list[str]:
    """The first ``count`` sentences as said (without the mark)."""
    return [sentence.replace(MARK, " ") for sentence in SENTENCES[:count]]


def items(spoken: dict[str, Spoken], count: int = len(SENTENCES)) -> list[PauseItem]:
    """The first ``count`` sentences (said by ``say``), each with its pause."""
    return [
        PauseItem(text, spoken[text].pcm, split_ms(marked, spoken[text]), PAUSES_MS[i % 7])
        for i, (marked, text) in enumerate(zip(SENTENCES, texts(count), strict=False))
    ]
