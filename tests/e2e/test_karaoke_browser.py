"""Word highlighting in real headless Chromium: the word lit is the one the timings say.

The dev server (demo model, real Kokoro) relays ``segment.marks``; the page schedules the audio
on the Web Audio clock and, every animation frame, lights the word being heard there. While a
turn plays, the test reads in one round trip the highlighted word, the audio clock time it was
chosen for and the page's record of the turn; it then works out from the timings and each
chunk's scheduled start which word plays at that time, and compares.
"""

from __future__ import annotations

import re
import time
from typing import Any

from tests.e2e.browser_helpers import (
    PROMPT,
    Page,
    open_chat,
    state,
    type_and_send,
    use_transport,
)
from tts_server.testing.server_thread import ServerThread

pytest_plugins = ("tests.e2e.browser_helpers",)

# Read in an animation frame callback, after the page's own frame loop has run in that frame, so
# that a frame the browser delays under load delays the sample with it.
SAMPLE_JS = """() => new Promise((resolve) => requestAnimationFrame(() => {
  const lit = document.querySelector(".word.heard");
  resolve({
    heard: voiceChat.heard && {...voiceChat.heard},
    now: voiceChat.audioTime(),
    dom: lit && {text: lit.textContent, index: Number(lit.dataset.index),
                 seq: Number(lit.closest(".seg").dataset.seq)},
  });
}))"""


def expected_word(segments: list[dict[str, Any]], at: float) -> tuple[int, int] | None:
    """(seq, index) of the word playing at ``at`` on the audio clock, from the timings."""
    for segment in segments:
        for chunk in segment["schedule"]:
            if chunk["startTime"] <= at < chunk["startTime"] + chunk["duration"]:
                ms = (chunk["offset"] + at - chunk["startTime"]) * 1000
                started = [i for i, w in enumerate(segment["words"]) if w["start_ms"] <= ms]
                return (segment["seq"], started[-1]) if started else None
    return None


def letters(text: str) -> str:
    return re.sub(r"\W", "", text).lower()


def test_the_highlighted_word_is_the_one_the_timings_say(page: Page, stack: ServerThread) -> None:
    open_chat(page, stack)
    use_transport(page, "sse")
    assert page.is_checked("#marks")  # the page asks for word timings
    type_and_send(page, PROMPT)
    page.wait_for_function("voiceChat.heard !== null", timeout=30_000)
    samples = []
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        samples.append(page.evaluate(SAMPLE_JS))
        page.wait_for_timeout(120)
    turn = state(page)["turns"][0]
    page.click("#stop")

    assert turn["marks"] and not turn["errors"]
    segments = turn["segments"]
    first = segments[0]
    assert [w["text"] for w in first["words"]][:2] == ["You", "said"]
    seen = []
    for sample in samples:
        heard, dom = sample["heard"], sample["dom"]
        if heard is None:
            continue
        assert sample["now"] - heard["at"] < 0.1  # chosen this frame, on the audio clock
        assert (heard["seq"], heard["index"]) == expected_word(segments, heard["at"]), sample
        assert dom == {"text": dom["text"], "index": heard["index"], "seq": heard["seq"]}
        assert letters(dom["text"]) == letters(heard["text"])
        seen.append((heard["seq"], heard["index"]))
    assert len(set(seen)) >= 5, seen  # the highlight moved word by word
    assert seen == sorted(seen)  # and only forward
