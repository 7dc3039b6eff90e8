"""Each voice's prior: the statistics the windowed ONNX decoder pools each window with.

The windowed decoder needs statistics close to the sentence's own for its instance norms and
int8 ranges (``split``); a window's own are far off, another voice's ruin the audio, and one
sentence's of the same voice are a gamble: after a short one ("Yes!", "No way, really?") the
next sentence's windows came out garbled or hundreds of times too loud. So a voice's prior is
the pooled statistics of three fixed calibration sentences (a statement, a question, a long
sentence with clauses) spoken in that voice, decoded whole: the same for every user and every
run. The engine calibrates its default voice when it loads; any other voice speaks its first
sentence whole and is calibrated before its second. Sentences under ``MIN_WINDOWED_FRAMES``
(``windows.worth_windows``) are decoded whole: their windows would gain little, and their
statistics stray furthest from any prior. The priors of the ``voices_kept`` most recently
used voices (or blends) are kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from tts_server.engines.onnx.split import Stats, as_prior, average

# The calibration sentences' phonemes (misaki, American English), so that calibrating needs no
# G2P: "The old lighthouse keeper climbed the stairs each night to light the lamp.", "Would you
# like to hear more about it?", "Well, it depends on the weather, but usually the ferry leaves
# at noon."
CALIBRATION = (
    "ði ˈOld lˈIthˌWs kˈipəɹ klˈImd ðə stˈɛɹz ˈiʧ nˈIt tə lˈIt ðə lˈæmp.",  # noqa: RUF001
    "wˌʊd ju lˈIk tə hˈɪɹ mˈɔɹ əbˈWt ɪt?",  # noqa: RUF001
    "wˈɛl, ɪt dəpˈɛndz ˌɔn ðə wˈɛðəɹ, bˌʌt jˈuʒəwəli ðə fˈɛɹi lˈivz æt nˈun.",  # noqa: RUF001
)


class VoicePriors:
    """The calibrated prior of each voice, the most recently used ``voices_kept`` of them."""

    def __init__(self, voices_kept: int = 16) -> None:
        if voices_kept < 1:
            raise ValueError(f"voices_kept must be at least 1 (got {voices_kept})")
        self._voices_kept = voices_kept
        self._lock = threading.Lock()  # lanes may start sentences side by side
        self._priors: OrderedDict[Hashable, Stats | None] = OrderedDict()  # None: heard once

    def prior(self, voice: Hashable, calibrate: Callable[[], list[Stats]]) -> Stats | None:
        """The voice's prior; None at its first sentence (decode it whole); at its second,
        ``calibrate()`` (the calibration sentences' statistics in the voice) makes it."""
        with self._lock:
            heard = voice in self._priors
            prior = self._priors.get(voice)
            self._keep(voice, prior)
        if prior is not None or not heard:
            return prior
        return self.calibrated(voice, calibrate())

    def calibrated(self, voice: Hashable, runs: list[Stats]) -> Stats:
        """Pool the calibration sentences' statistics ``runs`` into the voice's prior."""
        prior = as_prior(average(runs))
        with self._lock:
            self._keep(voice, prior)
        return prior

    def _keep(self, voice: Hashable, prior: Stats | None) -> None:
        self._priors[voice] = prior
        self._priors.move_to_end(voice)
        while len(self._priors) > self._voices_kept:
            self._priors.popitem(last=False)
