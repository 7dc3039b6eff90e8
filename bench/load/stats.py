"""The load benchmark's figures: one session's timings in, one level's statistics out.

Times are seconds from the moment every session of a level was told to speak. A sentence is
*late* when its first audio arrives after the moment real-time playback, started at the
session's first audio, reaches it (the previous sentences' audio played back to back).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, slots=True)
class SentenceTiming:
    """One sentence of one session: when its first audio and its end came, how long it plays."""

    first_audio_s: float
    end_s: float
    audio_s: float


@dataclass(frozen=True, slots=True)
class SessionRun:
    """One session's sentences, in speaking order, or why it produced none of some."""

    sentences: tuple[SentenceTiming, ...]
    errors: tuple[str, ...] = ()
    refused: bool = False  # the server refused the connection (busy) for the whole window


def late_sentences(sentences: Sequence[SentenceTiming]) -> int:
    """Sentences whose first audio came after real-time playback from the first audio needed it."""
    if not sentences:
        return 0
    due = sentences[0].first_audio_s
    late = 0
    for sentence in sentences:
        if sentence.first_audio_s > due:
            late += 1
            due = sentence.first_audio_s  # playback stalled until it came
        due += sentence.audio_s
    return late


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (linear interpolation); NaN for no values."""
    return float(np.percentile(values, q)) if values else float("nan")


@dataclass(frozen=True, slots=True)
class LevelStats:
    """The figures of one level (``sessions`` concurrent sessions) in one server mode."""

    sessions: int
    first_audio_ms: dict[str, float]  # p50, p95, p99 over the sessions' first sentence
    total_s: float  # from the start to the last sentence's end
    audio_s: float  # audio produced, all sessions together
    audio_s_per_s: float
    sentences: int
    late: int
    errors: int
    refusals: int  # connections refused as busy, from the server's counts or the client's
    error_samples: list[str] = field(default_factory=list)  # the first few error messages

    @classmethod
    def of(cls, runs: Sequence[SessionRun], server_refusals: int = 0) -> LevelStats:
        """Aggregate the sessions of one level."""
        firsts = [run.sentences[0].first_audio_s * 1000 for run in runs if run.sentences]
        ends = [s.end_s for run in runs for s in run.sentences]
        audio = sum(s.audio_s for run in runs for s in run.sentences)
        total = max(ends, default=0.0)
        errors = [e for run in runs for e in run.errors]
        refused = sum(run.refused for run in runs)
        return cls(
            sessions=len(runs),
            first_audio_ms={f"p{q}": round(percentile(firsts, q), 1) for q in (50, 95, 99)},
            total_s=round(total, 3),
            audio_s=round(audio, 3),
            audio_s_per_s=round(audio / total, 2) if total else 0.0,
            sentences=len(ends),
            late=sum(late_sentences(run.sentences) for run in runs),
            errors=len(errors),
            refusals=max(server_refusals, refused),
            error_samples=errors[:3],
        )
