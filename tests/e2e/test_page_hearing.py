"""The page hears as well as its recognizer does (issue 49, deliverable 1), in Chromium.

A few clips of the corpus of ``bench.speech.page_hearing`` (eSpeak NG voices, not ours; one
with a soft first word, one with a slow one), each written as a
WAV at test time and played through the fake microphone of a fresh headless Chromium into the
page, hands-free, on the dev server with the real TTS server. The page's transcript must have a
WER at most 0.05 above the project's own recognizer's, offline, on the same WAV: on the WAV as
it is and delayed by 1-4 ms, the worst of those readings, since the capture itself delays the
audio by a fraction of a millisecond and tiny.en reads a word on the edge differently for that
alone ("sea otters" and "the otters": docs/listening.md, "The page hears as well as the
model"). The whole corpus, and the strict comparison, is the benchmark's
(docs/benchmarks/page_hearing.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from bench.speech.asr_voices import score
from bench.speech.page_hearing import CORPUS, clip_wav, offline_transcripts, page_transcript
from tts_server.testing.server_thread import ServerThread

pytest_plugins = ("tests.e2e.browser_helpers",)  # the stack (dev server, real TTS)
pytestmark = pytest.mark.timeout(300)

# Tokyo; a soft "Well,"; a slow "Okay, set a timer" (its "s" is what the old filter lost). Not
# the "sea otters": through the page tiny.en reads it "the otters" in about half the
# runs, as the VAD's cut falls (docs/listening.md): the benchmark shows it, a test would flake.
CLIPS = [CORPUS[1], CORPUS[6], CORPUS[8]]
BOUND = 0.05  # the issue's: the page's WER at most this much above the offline WER


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, list[str]]]:
    """Each clip's WAV and what the recognizer hears in it offline (as it is, and shifted)."""
    folder = tmp_path_factory.mktemp("hearing")
    wavs = [folder / f"clip{n}.wav" for n in range(len(CLIPS))]
    pcms = [clip_wav(clip, wav) for clip, wav in zip(CLIPS, wavs, strict=True)]
    return list(zip(wavs, asyncio.run(offline_transcripts(pcms)), strict=True))


@pytest.fixture(scope="module")
def playwright(clips: list[tuple[Path, list[str]]]) -> Iterator[Any]:
    with sync_playwright() as running:
        yield running


@pytest.mark.parametrize("index", range(len(CLIPS)), ids=[c.name for c in CLIPS])
def test_the_page_hears_a_clip_as_well_as_the_recognizer_does_offline(
    playwright: Any, clips: list[tuple[Path, list[str]]], stack: ServerThread, index: int
) -> None:
    clip, (wav, offline) = CLIPS[index], clips[index]
    heard = page_transcript(playwright, stack.http_url, wav, "page")
    page_wer = score(clip.text, heard["page"])["wer"]
    offline_wer = max(score(clip.text, reading)["wer"] for reading in offline)
    assert page_wer <= offline_wer + BOUND, (clip.text, offline, heard)
    assert heard["utterances"] == 1, heard  # one utterance: no word cut off into another
