"""Eager recognition: the transcript started at a pause stands for the utterance that ends
there, and only for it."""

from __future__ import annotations

import asyncio

import pytest

from agent.listening.eager import EagerRecognition
from agent.listening.recognizer import Recognition, RecognitionError, Recognizer

EARLY, FINAL = b"\x01\x00" * 100, b"\x01\x00" * 108  # the same speech, a window more of silence


class Heard:
    """A recognizer that says how much audio it heard; each recognition waits for ``go``."""

    queue_depth = 0

    def __init__(self, error: RecognitionError | None = None) -> None:
        self.heard: list[bytes] = []
        self.murmurs: list[bool] = []  # each recognition's flag: over a paused reply
        self.go = asyncio.Event()
        self.error = error

    async def load(self) -> None: ...

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        self.heard.append(pcm)
        self.murmurs.append(murmurs)
        await self.go.wait()
        if self.error is not None:
            raise self.error
        return Recognition(f"{len(pcm)} bytes", 1.0)


def recognizer(heard: Heard) -> Recognizer:
    return heard


async def test_the_early_recognition_stands_for_the_utterance_ending_at_its_pause() -> None:
    heard = Heard()
    eager = EagerRecognition(recognizer(heard))
    eager.start(7, EARLY)
    await asyncio.sleep(0)  # it starts while the turn model decides
    assert heard.heard == [EARLY]
    heard.go.set()
    assert await eager.recognize(FINAL, 7) == Recognition("200 bytes", 1.0)
    assert heard.heard == [EARLY]  # not recognized twice


@pytest.mark.parametrize("ticket", [8, None])
async def test_an_utterance_of_another_pause_or_none_is_recognized_itself(
    ticket: int | None,
) -> None:
    heard = Heard()
    eager = EagerRecognition(recognizer(heard))
    eager.start(7, EARLY)
    await asyncio.sleep(0)
    heard.go.set()
    assert await eager.recognize(FINAL, ticket) == Recognition("216 bytes", 1.0)
    assert heard.heard == [EARLY, FINAL]
    assert await eager.recognize(FINAL, 7) == Recognition("216 bytes", 1.0)  # dropped: stale


async def test_over_a_paused_reply_both_recognitions_say_so_to_the_recognizer() -> None:
    """A murmur over a paused reply may be read as one (``Recognizer.recognize``)."""
    heard = Heard()
    heard.go.set()
    eager = EagerRecognition(recognizer(heard))
    eager.start(7, EARLY, murmurs=True)
    assert await eager.recognize(FINAL, 7) == Recognition("200 bytes", 1.0)
    await eager.recognize(FINAL, None, murmurs=True)
    await eager.recognize(FINAL, None)
    eager.start(8, EARLY)
    await eager.recognize(FINAL, 8, murmurs=True)  # the early one stands as it was asked
    assert heard.murmurs == [True, True, False, False]


async def test_a_new_pause_drops_the_early_one_before_it_starts() -> None:
    heard = Heard()
    eager = EagerRecognition(recognizer(heard))
    eager.start(7, EARLY)
    eager.start(9, FINAL)  # speech resumed and paused again before the first one ran
    await asyncio.sleep(0)
    assert heard.heard == [FINAL]
    heard.go.set()
    assert await eager.recognize(FINAL, 9) == Recognition("216 bytes", 1.0)


async def test_the_early_ones_error_is_the_utterances() -> None:
    heard = Heard(RecognitionError("recognition failed: injected"))
    eager = EagerRecognition(recognizer(heard))
    eager.start(7, EARLY)
    heard.go.set()
    with pytest.raises(RecognitionError, match="injected"):
        await eager.recognize(FINAL, 7)
    assert heard.heard == [EARLY]


async def test_dropping_leaves_nothing_running() -> None:
    heard = Heard()
    eager = EagerRecognition(recognizer(heard))
    eager.start(7, EARLY)
    await asyncio.sleep(0)
    eager.drop()
    await asyncio.sleep(0)
    assert [t for t in asyncio.all_tasks() if t.get_name() == "eager-asr"] == []


async def test_early_waits_for_the_pauses_recognition_and_leaves_it_for_the_utterance() -> None:
    heard = Heard()
    eager = EagerRecognition(recognizer(heard))
    eager.start(7, EARLY)
    waiting = asyncio.create_task(eager.early(7))
    await asyncio.sleep(0)
    assert not waiting.done()  # it waits for the recognition, not for a new one
    heard.go.set()
    assert await waiting == Recognition("200 bytes", 1.0)
    assert await eager.recognize(FINAL, 7) == Recognition("200 bytes", 1.0)  # still there
    assert heard.heard == [EARLY]


async def test_early_for_another_pause_is_none_and_a_cancelled_wait_leaves_it_running() -> None:
    heard = Heard()
    eager = EagerRecognition(recognizer(heard))
    assert await eager.early(7) is None  # none started yet
    eager.start(7, EARLY)
    assert await eager.early(8) is None
    waiting = asyncio.create_task(eager.early(7))
    await asyncio.sleep(0)
    waiting.cancel()  # the speculative reply is dropped, the turn may still end here
    await asyncio.wait([waiting])
    heard.go.set()
    assert await eager.recognize(FINAL, 7) == Recognition("200 bytes", 1.0)
    assert heard.heard == [EARLY]


async def test_early_raises_the_recognitions_error() -> None:
    heard = Heard(RecognitionError("recognition failed: injected"))
    eager = EagerRecognition(recognizer(heard))
    eager.start(7, EARLY)
    heard.go.set()
    with pytest.raises(RecognitionError):
        await eager.early(7)
