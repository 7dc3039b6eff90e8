"""A sentence through the split Kokoro ONNX model, its audio sent a window at a time.

The windowed decoder needs statistics close to the sentence's own for its instance norms and
int8 ranges (``split``); a window's own are far off, another voice's ruin the audio, and
another sentence's of the same voice come close. So each voice keeps a prior: its first
``calibration`` sentences are decoded whole (one chunk, exactly the whole graph's audio) and
their statistics pooled; its later sentences are decoded in windows against that prior. The
priors of the ``voices_kept`` most recently used voices (or blends) are kept.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tts_server.engines.onnx.split import SplitKokoro, Stats, as_prior, average
from tts_server.engines.windows import WindowPlan


@dataclass(frozen=True)
class Sentence:
    """A sentence's durations (frames per token, pads included), then its audio by window."""

    durations: np.ndarray
    audio: Iterator[np.ndarray]
    windowed: bool  # False: decoded whole, to learn the voice's prior


class WindowedKokoro:
    """Sentences of the split model, each decoded whole or in ``plan``'s windows."""

    def __init__(
        self,
        split: SplitKokoro,
        plan: WindowPlan,
        calibration: int = 1,
        voices_kept: int = 16,
    ) -> None:
        if calibration < 1 or voices_kept < 1:
            raise ValueError(
                f"calibration and voices_kept must be at least 1 ({calibration}, {voices_kept})"
            )
        self.split = split
        self.plan = plan
        self._calibration = calibration
        self._voices_kept = voices_kept
        self._lock = threading.Lock()  # lanes may run sentences side by side
        self._runs: OrderedDict[Hashable, list[Stats]] = OrderedDict()

    def plan_for(self, durations: np.ndarray) -> WindowPlan:
        """``plan`` with its first window counted from the end of the leading pad token.

        The pad's frames (about 0.3 s) are near-silence that the engine's trim drops: a first
        window inside them would be decoded early but would carry no speech.
        """
        return dataclasses.replace(self.plan, first=self.plan.first + int(durations[0]))

    def prior(self, voice: Hashable) -> Stats | None:
        """The prior the voice's next sentence is decoded against; None: it is decoded whole."""
        with self._lock:
            runs = self._runs.get(voice, [])
            if voice in self._runs:
                self._runs.move_to_end(voice)
        return as_prior(average(runs)) if len(runs) >= self._calibration else None

    def learn(self, voice: Hashable, stats: Stats) -> None:
        """Pool a whole sentence's statistics into the voice's prior."""
        with self._lock:
            runs = self._runs.setdefault(voice, [])
            if len(runs) < self._calibration:
                runs.append(stats)
            self._runs.move_to_end(voice)
            while len(self._runs) > self._voices_kept:
                self._runs.popitem(last=False)

    def sentence(
        self,
        tokens: list[int],
        style: np.ndarray,
        speed: float,
        voice: Hashable,
        options: Any = None,
    ) -> Sentence:
        """Run the text side now; the audio is decoded as the caller iterates.

        Stopping the iteration (a cancel) decodes no further window; ``options`` (onnxruntime
        ``RunOptions``) can also ``terminate`` the window being decoded.
        """
        features = self.split.text(tokens, style, speed, options)
        prior = self.prior(voice)
        if prior is None:

            def whole() -> Iterator[np.ndarray]:
                audio, stats = self.split.whole(features, options)
                self.learn(voice, stats)
                yield audio

            return Sentence(features.durations, whole(), windowed=False)
        audio = self.split.stream(
            features, self.plan_for(features.durations), prior, options=options
        )
        return Sentence(features.durations, audio, windowed=True)
