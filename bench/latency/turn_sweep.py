"""The turn model's knobs swept offline: the pauses it is asked at and the scores that end a turn.

    python -m bench.latency.turn_sweep            # writes docs/benchmarks/turn_sweep.{json,md}
    python -m bench.latency.turn_sweep --sentences 6 --out /tmp/sweep

Three corpora are replayed through the socket's own VAD and endpointer
(``endpointing.replay``): the pause corpus (``bench.latency.pause_corpus``: sentences said by
the project's TTS, each whole and with 300-900 ms of silence spliced in mid-sentence), the
voice-to-voice questions, and recorded people (``bench.speech.human_speech``: 13 utterances of
five people, each one whole utterance with the speaker's own pauses in it, downloaded once).
Each setting is a ``pause_ms`` x ``turn_threshold`` asked once per pause, a first ask with a
second (``turn_recheck_ms`` x ``turn_recheck_threshold``) where the first said unfinished, or
the silence rule at 500 ms, the baseline. Per setting: the **false cut-offs** (the turn ended
inside a spliced pause), the complete utterances (the whole sentences, the questions, and
apart the people's) **cut before their end** (a gap inside one, "What | time does...", "He
was not | an ill disposed young man", taken for the end of the turn), and on the others the
**end-of-turn delay**: the silence the rule waited after the frame holding the last loud
sample, in whole 32 ms frames, plus the model's median time per decision in this run where
the model's ``complete`` ended the turn. Deterministic but for that cost: the scores do not
depend on timing, so each distinct audio is scored once. The report:
``bench.latency.turn_sweep_report``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import itertools
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from agent.config import ListeningConfig
from agent.listening.turn_model import SmartTurn, TurnModel
from bench.latency import pause_corpus
from bench.latency.agent_latency import machine
from bench.latency.endpointing import CONFIGS, FRAME_MS, last_ask_ms, pause_wait_ms, replay
from bench.latency.mic_session import LEAD_MS, last_loud_frame, stream_of
from bench.latency.stats import spread
from bench.latency.turn_sweep_report import table, write
from bench.latency.voice_to_voice import UTTERANCES
from bench.speech.human_speech import HumanClip, human_clips

STEM = "turn_sweep"
OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
PAUSES_MS = (64, 96, 128, 160, 200)
THRESHOLDS = (0.3, 0.5, 0.7, 0.85)
# the first ask (pause, threshold) of a pause asked twice, and its second where it said unfinished
FIRSTS = ((96, 0.3), (96, 0.5), (96, 0.85), (128, 0.3), (128, 0.5), (160, 0.5), (160, 0.7))
RECHECKS_MS = (160, 224, 288)
RECHECK_THRESHOLDS = (0.5, 0.7, 0.85)
KNOBS = ("endpointing", "pause_ms", "turn_threshold", "turn_recheck_ms", "turn_recheck_threshold")


class ScoredOnce:
    """A turn model that scores each distinct audio once (the sweep asks the same pause often)."""

    def __init__(self, model: TurnModel) -> None:
        self._model = model
        self._scores: dict[bytes, float] = {}
        self.costs: list[float] = []

    def load(self) -> None:
        self._model.load()

    def score(self, pcm: bytes) -> float:
        key = hashlib.blake2b(pcm, digest_size=16).digest()
        if key not in self._scores:
            started = time.perf_counter()
            self._scores[key] = self._model.score(pcm)
            self.costs.append((time.perf_counter() - started) * 1000)
        return self._scores[key]


def settings() -> dict[str, ListeningConfig]:
    """The silence rule, then each pause and threshold of the turn model asked once, then each
    first ask with a second later in the pause (eager recognition does not move where a turn
    ends)."""
    once = replace(CONFIGS["turn_model"], turn_recheck_ms=0)
    swept = {
        f"pause {pause} ms, threshold {threshold}": replace(
            once, pause_ms=pause, turn_threshold=threshold
        )
        for pause in PAUSES_MS
        for threshold in THRESHOLDS
    }
    twice = {
        f"pause {pause} ms, threshold {first}; again at {recheck} ms, threshold {again}": replace(
            CONFIGS["turn_model"],
            pause_ms=pause,
            turn_threshold=first,
            turn_recheck_ms=recheck,
            turn_recheck_threshold=again,
        )
        for (pause, first), recheck, again in itertools.product(
            FIRSTS, RECHECKS_MS, RECHECK_THRESHOLDS
        )
        if recheck > pause
    }
    return {"silence rule (500 ms)": CONFIGS["silence"], **swept, **twice}


def rechecks(config: ListeningConfig) -> bool:
    """The model is asked a second time in a pause it called unfinished."""
    return last_ask_ms(config) > pause_wait_ms(config)


def is_default(config: ListeningConfig) -> bool:
    """``config`` ends a turn where the defaults do (its knobs are theirs)."""
    default = ListeningConfig()
    return all(getattr(config, knob) == getattr(default, knob) for knob in KNOBS)


@dataclass(slots=True)
class Ends:
    """Where a setting ended the turn of each complete utterance."""

    waits: dict[int, tuple[int, bool]] = field(default_factory=dict)  # index: (ms, by the model)
    cut: list[int] = field(default_factory=list)  # ended before their speech did
    asked: int = 0  # the model's decisions


def ends(complete: Sequence[bytes], config: ListeningConfig, model: TurnModel) -> Ends:
    """Each complete utterance replayed: cut before its end, or the silence waited after it."""
    found = Ends()
    for index, pcm in enumerate(complete):
        ended = replay(stream_of(pcm), config, model)
        found.asked += len(ended.costs)
        wait = (ended.frame - last_loud_frame(pcm)) * FRAME_MS
        if wait < 0:
            found.cut.append(index)
        else:
            ended_by_model = config.endpointing == "turn_model" and wait < config.turn_wait_ms
            found.waits[index] = (wait, ended_by_model)
    return found


def false_cutoffs(
    paused: Sequence[pause_corpus.PauseItem], config: ListeningConfig, model: TurnModel
) -> tuple[int, int]:
    """The paused sentences whose turn ended in the pause, and the model's decisions."""
    cut, asked = 0, 0
    for item in paused:
        replayed = replay(stream_of(item.paused), config, model)
        cut += replayed.at_ms <= LEAD_MS + item.resume_ms
        asked += len(replayed.costs)
    return cut, asked


def sweep(
    paused: Sequence[pause_corpus.PauseItem],
    complete: Sequence[bytes],
    people: dict[str, bytes],
    model: TurnModel,
) -> list[dict[str, Any]]:
    """Each setting's false cut-offs on ``paused``, and its cuts and waits (ms) on ``complete``
    (the last of them the questions) and on ``people`` (a name: each recorded utterance)."""
    rows = []
    names = list(people)
    for name, config in settings().items():
        asks = config.endpointing == "turn_model"
        cut, asked = false_cutoffs(paused, config, model)
        whole, human = ends(complete, config, model), ends(list(people.values()), config, model)
        first_question = len(complete) - len(UTTERANCES)
        rows.append(
            {
                "setting": name,
                "default": is_default(config),
                "pause_ms": config.pause_ms if asks else None,
                "threshold": config.turn_threshold if asks else None,
                "recheck_ms": config.turn_recheck_ms if asks and rechecks(config) else None,
                "recheck_threshold": config.turn_recheck_threshold,
                "false_cutoffs": cut,
                "whole_cut": len(whole.cut),
                "waits_ms": list(whole.waits.values()),
                "ended_by_model": sum(by for _, by in whole.waits.values()),
                "questions_by_model": sum(
                    by for i, (_, by) in whole.waits.items() if i >= first_question
                ),
                "human_cut": len(human.cut),
                "human_cut_clips": [names[i] for i in human.cut],
                "human_waits_ms": list(human.waits.values()),
                "human_by_model": sum(by for _, by in human.waits.values()),
                "asked_per_utterance": round(
                    (asked + whole.asked) / max(1, len(paused) + len(complete)), 2
                ),
            }
        )
    return rows


def delays(waits: list[tuple[int, bool]], model_ms: float) -> tuple[dict[str, Any], float | None]:
    """The end-of-turn delays' median and p90, and their mean: each wait, plus the model's time
    where it ended the turn."""
    ms = [wait + (model_ms if by_model else 0.0) for wait, by_model in waits]
    return spread(ms), round(statistics.fmean(ms), 1) if ms else None


def with_cost(rows: list[dict[str, Any]], model_ms: float) -> list[dict[str, Any]]:
    """Each row's end-of-turn delays, on the complete utterances and on the people's."""
    for row in rows:
        row["eot_ms"], row["eot_mean_ms"] = delays(row.pop("waits_ms"), model_ms)
        row["human_eot_ms"], row["human_eot_mean_ms"] = delays(row.pop("human_waits_ms"), model_ms)
    return rows


async def corpus(sentences: int) -> tuple[list[pause_corpus.PauseItem], list[bytes]]:
    """The pause corpus's items, and the complete utterances (its sentences whole and the
    questions)."""
    spoken = await pause_corpus.say([*UTTERANCES, *pause_corpus.texts(sentences)])
    items = pause_corpus.items(spoken, sentences)
    return items, [item.pcm for item in items] + [spoken[text].pcm for text in UTTERANCES]


def pcm_of(clip: HumanClip) -> bytes:
    """A recorded utterance as the page sends it: 16 kHz s16le mono."""
    return (np.clip(clip.samples, -1, 1) * 32767).astype("<i2").tobytes()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.latency.turn_sweep", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--sentences", type=int, default=len(pause_corpus.SENTENCES))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    host = machine()
    if (load := host["load_average"][0]) > 1.0:
        print(f"bench: load average {load}: the model's cost may be noisy", file=sys.stderr)
    clips = human_clips()
    paused, complete = asyncio.run(corpus(args.sentences))
    model = ScoredOnce(SmartTurn())
    model.load()
    rows = sweep(paused, complete, {clip.name: pcm_of(clip) for clip in clips}, model)
    model_ms = spread(model.costs)
    report = {
        "benchmark": STEM,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": host,
        "load_average_end": machine()["load_average"],
        "listening": {k: getattr(ListeningConfig(), k) for k in ListeningConfig.__slots__},
        "paused": len(paused),
        "complete": len(complete),
        "human": [clip.about() for clip in clips],
        "model_ms": model_ms,
        "decisions": len(model.costs),
        "rows": with_cost(rows, model_ms["median"]),
    }
    for path in write(report, args.out, STEM):
        print(f"wrote {path}")
    print("\n".join(table(report)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
