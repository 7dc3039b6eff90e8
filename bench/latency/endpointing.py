"""The end-of-turn rules the voice-to-voice ablation compares, and each replayed offline.

``CONFIGS``: the silence rule (500 ms, as before the turn model), the turn model (Smart Turn
at the pause and once more later in it, recognition once the turn has ended), the turn model
with eager recognition (begun in the wait a pause called unfinished), and with the eager start
too (the reply begun on the eager transcript while an
unfinished turn waits, held until it ends there: all on, the defaults). ``replay`` feeds a
stream to the socket's own VAD and endpointer, in the same 32 ms frames, with the turn model
scored in line: where the rule ends the turn, which is where the live socket ends it too (its
reader waits for the model's answer at the pause it asked about), and what each of the
model's decisions cost.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from agent.browser_leg import MIC_SAMPLE_RATE
from agent.config import ListeningConfig
from agent.listening.settings import WINDOW_MS
from agent.listening.turn_model import TurnModel, TurnScore

FRAME_MS = 32  # a MIC frame: what the page's worklet sends
CONFIGS = {
    "silence": ListeningConfig(endpointing="silence", eager_asr=False, eager_start=False),
    "turn_model": ListeningConfig(endpointing="turn_model", eager_asr=False, eager_start=False),
    "eager_asr": ListeningConfig(endpointing="turn_model", eager_asr=True, eager_start=False),
    "eager_start": ListeningConfig(endpointing="turn_model", eager_asr=True, eager_start=True),
}
DEFAULT = "eager_start"  # what make run uses: the barge-ins and the goals read it
NAMES = {
    "silence": "silence rule (500 ms)",
    "turn_model": "+ turn model",
    "eager_asr": "+ eager recognition",
    "eager_start": "+ eager start",
}


@dataclass(slots=True)
class Replay:
    """Where the rule ended the first turn: after ``frame`` (0-based), its speech having ended
    ``at_ms`` into the stream; ``costs``: the turn model's wall ms per decision asked."""

    frame: int
    at_ms: float
    costs: list[float] = field(default_factory=list)


def pause_wait_ms(config: ListeningConfig) -> int:
    """The silence after which the turn model is asked, in whole VAD windows."""
    return math.ceil(config.pause_ms / WINDOW_MS) * WINDOW_MS


def last_ask_ms(config: ListeningConfig) -> int:
    """The silence after which the turn model is asked last in a pause (its second ask, where
    that falls between the first and the wait), in whole VAD windows: where an unfinished
    answer starts eager recognition."""
    recheck = math.ceil(config.turn_recheck_ms / WINDOW_MS) * WINDOW_MS
    wait = math.ceil(config.turn_wait_ms / WINDOW_MS) * WINDOW_MS
    return recheck if pause_wait_ms(config) < recheck < wait else pause_wait_ms(config)


def replay(stream: bytes, config: ListeningConfig, model: TurnModel | None = None) -> Replay:
    """``stream`` through the VAD and endpointer of ``config`` (and ``model``, loaded, if it
    asks one); raises ``ValueError`` if the turn never ends."""
    from agent.listening.endpointer import Ended, Endpointer, Paused
    from agent.listening.vad import VoiceActivity

    asks = config.endpointing == "turn_model"
    if asks and model is None:
        raise ValueError("the turn model rule needs a model")
    vad, endpointer = VoiceActivity(), Endpointer(config, turn_model=asks)
    size, costs = MIC_SAMPLE_RATE * FRAME_MS // 1000 * 2, []
    for index, offset in enumerate(range(0, len(stream), size)):
        for window, probability in vad.windows(stream[offset : offset + size]):
            events = list(endpointer.push(window, probability))
            for event in events:
                if isinstance(event, Paused) and model is not None:
                    started = time.perf_counter()
                    score = model.score(event.pcm)
                    costs.append((time.perf_counter() - started) * 1000)
                    events += endpointer.judged(event.ticket, TurnScore(score, costs[-1]))
                elif isinstance(event, Ended):
                    return Replay(index, event.at_ms, costs)
    raise ValueError("the endpointer never ended the turn")
