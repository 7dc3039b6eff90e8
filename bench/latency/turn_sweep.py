"""The turn model's knobs swept offline: the pauses it is asked at and the scores that end a turn.

    python -m bench.latency.turn_sweep            # writes docs/benchmarks/turn_sweep.{json,md}
    python -m bench.latency.turn_sweep --sentences 6 --out /tmp/sweep

The pause corpus (``bench.latency.pause_corpus``: sentences said by the project's TTS, each
whole and with 300-900 ms of silence spliced in mid-sentence) and the voice-to-voice questions
are replayed through the socket's own VAD and endpointer (``endpointing.replay``) for each
``pause_ms`` x ``turn_threshold`` asked once per pause, for a first ask at 96 ms with a second
(``turn_recheck_ms`` x ``turn_recheck_threshold``) where the first said unfinished, and for
the silence rule at 500 ms, its baseline. Per
setting: the **false cut-offs** (the turn ended inside a pause), the complete utterances (the
whole sentences and the questions) **cut before their end** (a short gap inside one, "What |
time does...", taken for the end of the turn), and on the others the **end-of-turn delay**:
the silence the rule waited after the frame holding the last loud sample, in whole 32 ms
frames, plus the model's median time per decision in this run where the model's ``complete``
ended the turn. Deterministic but
for that cost: the scores do not depend on timing, so each distinct audio is scored once.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.config import ListeningConfig
from agent.listening.turn_model import SmartTurn, TurnModel
from bench.latency import pause_corpus
from bench.latency.agent_latency import machine
from bench.latency.endpointing import CONFIGS, FRAME_MS, last_ask_ms, pause_wait_ms, replay
from bench.latency.mic_session import LEAD_MS, last_loud_frame, stream_of
from bench.latency.stats import spread
from bench.latency.voice_to_voice import UTTERANCES

STEM = "turn_sweep"
OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
PAUSES_MS = (64, 96, 128, 160, 200)
THRESHOLDS = (0.3, 0.5, 0.7, 0.85)
# the second ask of a pause the model called unfinished: after the first at 96 ms
FIRST_THRESHOLDS = (0.3, 0.5)
RECHECKS_MS = (160, 224)
RECHECK_THRESHOLDS = (0.5, 0.7, 0.85)


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
    """The silence rule, then each pause and threshold of the turn model asked once, then at
    96 ms with a second ask later in the pause (eager recognition does not move where a turn
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
        f"pause 96 ms, threshold {first}; again at {recheck} ms, threshold {again}": replace(
            CONFIGS["turn_model"],
            pause_ms=96,
            turn_threshold=first,
            turn_recheck_ms=recheck,
            turn_recheck_threshold=again,
        )
        for first in FIRST_THRESHOLDS
        for recheck in RECHECKS_MS
        for again in RECHECK_THRESHOLDS
    }
    return {"silence rule (500 ms)": CONFIGS["silence"], **swept, **twice}


def rechecks(config: ListeningConfig) -> bool:
    """The model is asked a second time in a pause it called unfinished."""
    return last_ask_ms(config) > pause_wait_ms(config)


def sweep(
    paused: list[pause_corpus.PauseItem], complete: list[bytes], model: ScoredOnce
) -> list[dict[str, Any]]:
    """Each setting's false cut-offs on ``paused`` and waits (frames) on ``complete``."""
    rows = []
    for name, config in settings().items():
        asks = config.endpointing == "turn_model"
        cut, asked = 0, 0
        for item in paused:
            replayed = replay(stream_of(item.paused), config, model)
            cut += replayed.at_ms <= LEAD_MS + item.resume_ms
            asked += len(replayed.costs)
        waits: list[tuple[int, bool]] = []  # the silence waited, and whether the model ended it
        cut_whole = 0  # complete utterances whose turn ended before their speech did
        questions = 0  # voice-to-voice questions (the last of ``complete``) the model ended
        for index, pcm in enumerate(complete):
            ended = replay(stream_of(pcm), config, model)
            asked += len(ended.costs)
            wait = (ended.frame - last_loud_frame(pcm)) * FRAME_MS
            if wait < 0:
                cut_whole += 1
                continue
            waits.append((wait, asks and wait < config.turn_wait_ms))
            questions += waits[-1][1] and index >= len(complete) - len(UTTERANCES)
        rows.append(
            {
                "setting": name,
                "pause_ms": config.pause_ms if asks else None,
                "threshold": config.turn_threshold if asks else None,
                "recheck_ms": config.turn_recheck_ms if asks and rechecks(config) else None,
                "recheck_threshold": config.turn_recheck_threshold,
                "false_cutoffs": cut,
                "whole_cut": cut_whole,
                "waits_ms": waits,
                "ended_by_model": sum(by_model for _, by_model in waits),
                "questions_by_model": questions,
                "asked_per_utterance": round(asked / (len(paused) + len(complete)), 2),
            }
        )
    return rows


def with_cost(rows: list[dict[str, Any]], model_ms: float) -> list[dict[str, Any]]:
    """Each row's end-of-turn delay: the frames waited, plus the model's time where it ended it."""
    for row in rows:
        delays = [wait + (model_ms if by_model else 0.0) for wait, by_model in row.pop("waits_ms")]
        row["eot_ms"] = spread(delays)
        row["eot_mean_ms"] = round(statistics.fmean(delays), 1)
    return rows


def table(report: dict[str, Any]) -> list[str]:
    """The Markdown table of every setting."""
    lines = [
        "| setting | false cut-offs in the pauses (of "
        f"{report['paused']}) | complete utterances cut before their end (of "
        f"{report['complete']}) | end of turn, median (mean) | ended by the model (of them the "
        f"{len(UTTERANCES)} questions) | the model's asks per utterance |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in report["rows"]:
        lines.append(
            f"| {row['setting']} | {row['false_cutoffs']} | {row['whole_cut']} "
            f"| {row['eot_ms']['median']:.0f} ms "
            f"({row['eot_mean_ms']:.0f}) | "
            + (
                f"{row['ended_by_model']} ({row['questions_by_model']}) | "
                f"{row['asked_per_utterance']} |"
                if row["pause_ms"]
                else "- | - |"
            )
        )
    return lines


def write(report: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / f"{STEM}.json", out / f"{STEM}.md"
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    model = report["model_ms"]
    md = [
        "# The turn model's pauses and thresholds, swept offline",
        "",
        f"{report['date']}, {report['machine']['cores']} cores, load average "
        f"{report['machine']['load_average'][0]} at the start. `python -m {__spec__.name}`.",
        "",
        f"{report['paused']} sentences of the pause corpus with their pause (300-900 ms), for the "
        f"false cut-offs; {report['complete']} complete utterances (the same sentences whole and "
        "the voice-to-voice questions), for the end-of-turn delay: the frames of silence waited "
        f"after the last loud one, plus the model's median time per decision in this run "
        f"({model['median']:.1f} ms, p90 {model['p90']:.1f}, {report['decisions']} distinct "
        "decisions) where its `complete` ended the turn. The live delay adds the frames' delivery.",
        "",
        "A setting is the pause the model is asked at and the score that ends the turn there; "
        "with `again at`, a pause it called unfinished is asked about once more at that silence, "
        "where the second threshold ends the turn. Ended by the model: the complete utterances "
        "whose turn the model's answer ended (not the wait), and in brackets how many of those "
        "are the voice-to-voice questions, whose transcript waits on it.",
        "",
        *table(report),
        "",
    ]
    md_path.write_text("\n".join(md))
    return [json_path, md_path]


async def corpus(sentences: int) -> tuple[list[pause_corpus.PauseItem], list[bytes]]:
    """The pause corpus's items, and the complete utterances (its sentences whole and the
    questions)."""
    spoken = await pause_corpus.say([*UTTERANCES, *pause_corpus.texts(sentences)])
    items = pause_corpus.items(spoken, sentences)
    return items, [item.pcm for item in items] + [spoken[text].pcm for text in UTTERANCES]


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
    paused, complete = asyncio.run(corpus(args.sentences))
    model = ScoredOnce(SmartTurn())
    model.load()
    rows = sweep(paused, complete, model)
    model_ms = spread(model.costs)
    report = {
        "benchmark": STEM,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": host,
        "listening": {k: getattr(ListeningConfig(), k) for k in ListeningConfig.__slots__},
        "paused": len(paused),
        "complete": len(complete),
        "model_ms": model_ms,
        "decisions": len(model.costs),
        "rows": with_cost(rows, model_ms["median"]),
    }
    for path in write(report, args.out):
        print(f"wrote {path}")
    print("\n".join(table(report)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
