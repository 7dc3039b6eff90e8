"""The ONNX engine's lanes: each lane's sessions, which of them a run takes, and its interrupt.

A lane runs one job at a time on its own session, with the intra-op threads it was given. Where
lanes are given more threads than their share of the cores (``voice-agent dev``: two lanes,
each on every core), a lane alone runs as fast as the machine allows, but two lanes at once run
four threads on two cores: each operator of a two-thread session waits for a thread that waits
for the other lane's time slice, and the cores do less work for the same audio. So such a lane
may also hold a ``narrow`` session of one thread, which a run takes while another lane is
running, or while another listener's reply is under way (docs/tts_server.md, "Two listeners
at once"). A ``brief`` run (a sentence's text side: about 80 ms) is not counted as running by
the other lanes, and takes the narrow session only while another lane runs anything: a window
that started beside it would otherwise keep one thread for seconds after it ended.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

M = TypeVar("M")  # a lane's model: an onnxruntime session, or a split graph's pair of them


@dataclass(frozen=True, slots=True)
class LaneModels(Generic[M]):
    """One lane's models: ``wide``, on every thread the lane was given, and ``narrow``, on
    one, for while another lane runs (None: the lane always runs ``wide``)."""

    wide: M
    narrow: M | None = None


class Lanes(Generic[M]):
    """Every lane's models, and the run each lane has in flight (its onnxruntime
    ``RunOptions``, which ``interrupt`` terminates). Thread-safe: each lane is one thread."""

    def __init__(self, models: list[LaneModels[M]], run_options: Callable[[], Any]) -> None:
        if not models:
            raise ValueError("an engine needs at least one lane")
        self.models = models
        self._run_options = run_options
        self._running: list[Any | None] = [None] * len(models)
        self._counted = [False] * len(models)  # running, and not ``brief``
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.models)

    @contextlib.contextmanager
    def running(
        self, lane: int, crowded: bool = False, brief: bool = False
    ) -> Iterator[tuple[M, Any]]:
        """A run on ``lane``: the model it takes and the ``RunOptions`` to run it with. The
        model is ``narrow`` where the lane has one and another lane is running now, or the
        caller says the engine is ``crowded`` (another listener's reply is under way, between
        two of its runs); else ``wide``. A run that is not ``brief`` does not count another
        lane's ``brief`` run (over in a moment) as running."""
        options = self._run_options()
        models = self.models[lane]
        with self._lock:
            beside = [run is not None for run in self._running] if brief else self._counted
            others = any(run for n, run in enumerate(beside) if n != lane)
            self._running[lane], self._counted[lane] = options, not brief
        shared = others or crowded
        model = models.narrow if shared and models.narrow is not None else models.wide
        try:
            yield model, options
        finally:
            with self._lock:
                self._running[lane], self._counted[lane] = None, False

    def interrupt(self, lane: int) -> None:
        """Terminate ``lane``'s run in flight, if any: its ``run`` fails within milliseconds."""
        with self._lock:
            options = self._running[lane]
            if options is not None:
                options.terminate = True
