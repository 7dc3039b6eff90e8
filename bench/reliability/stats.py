"""The reliability benchmark's figures: process resources, one turn as the client saw it, a
soak phase's statistics, one fault's outcome, and the bounds they are checked against."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.load.stats import percentile

# Growth allowed from the first sample after a soak phase's warm-up to its last. Measured: RSS
# (trimmed, see ``sample``) +2.2 MB over 475 turns on one conversation, +4.8 MB over 50 x 9
# turns (their histories still filling strands' 40-message window). A leak of one file
# descriptor or task per turn, or of 20 KB per turn, over the 450-475 measured turns exceeds these.
BOUNDS = {"fds": 8, "tasks": 8, "rss_mb": 8.0}
ERROR_TYPE = re.compile(r"\((\w+):")  # "speech is unavailable (TTSTimeout: ...)"


@dataclass(frozen=True, slots=True)
class Sample:
    """The process's resources after ``turns`` turns of a phase."""

    turns: int
    fds: int  # open file descriptors
    tasks: int  # pending asyncio tasks on every loop (agent, TTS server, client)
    rss_mb: float


def sample(turns: int) -> Sample:
    """Collect garbage, count, then read RSS once glibc has returned its free memory (Linux).

    ``malloc_trim`` makes RSS count memory held, not free memory glibc keeps (this sampler's own
    list of every object is megabytes).
    """
    gc.collect()
    tasks = sum(1 for o in gc.get_objects() if isinstance(o, asyncio.Task) and not o.done())
    _trim()
    with open("/proc/self/status") as status:
        rss_kb = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return Sample(turns, len(os.listdir("/proc/self/fd")), tasks, round(rss_kb / 1024, 1))


def _trim() -> None:
    """``malloc_trim(0)`` where the C library has it (glibc)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


@dataclass(slots=True)
class TurnRecord:
    """One turn as the client saw it: its last event, times from the POST, errors; with
    ``keep``, its segments' texts and audio. A soak keeps hundreds: nothing per event."""

    last: str = ""  # the type of the last event
    first_audio_s: float | None = None
    total_s: float = 0.0
    errors: list[tuple[str, str, float]] = field(default_factory=list)  # code, message, at (s)
    in_order: bool = True  # audio events never went back to an earlier segment
    audio_seq: int = -1  # the segment of the latest audio event
    texts: dict[int, str] = field(default_factory=dict)  # segment seq -> its text (kept)
    audio: dict[int, bytearray] = field(default_factory=dict)  # seq -> PCM (kept)

    @property
    def ended(self) -> bool:
        """The turn's last event was ``turn.end``."""
        return self.last == "turn.end"


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1)}


def _growth(samples: Sequence[Sample], name: str) -> dict[str, float]:
    values = [getattr(s, name) for s in samples]
    return {
        "start": values[0],
        "end": values[-1],
        "max": max(values),
        "growth": round(values[-1] - values[0], 1),
        "bound": BOUNDS[name],
    }


@dataclass(frozen=True, slots=True)
class SoakStats:
    """One soak phase: its turns, their latency, and the resources it ended with."""

    name: str
    conversations: int
    turns: int
    ended: int  # turns whose last event was turn.end
    errors: int  # error events
    first_audio_ms: dict[str, float]
    turn_ms: dict[str, float]
    fds: dict[str, float]
    tasks: dict[str, float]
    rss_mb: dict[str, float]
    samples: list[Sample]

    @classmethod
    def of(
        cls, name: str, conversations: int, records: Sequence[TurnRecord], samples: list[Sample]
    ) -> SoakStats:
        """``samples[0]`` is taken after the warm-up: growth is measured from it."""
        first = [r.first_audio_s * 1000 for r in records if r.first_audio_s is not None]
        return cls(
            name=name,
            conversations=conversations,
            turns=len(records),
            ended=sum(r.ended for r in records),
            errors=sum(len(r.errors) for r in records),
            first_audio_ms=_spread(first),
            turn_ms=_spread([r.total_s * 1000 for r in records]),
            fds=_growth(samples, "fds"),
            tasks=_growth(samples, "tasks"),
            rss_mb=_growth(samples, "rss_mb"),
            samples=samples,
        )

    def failures(self) -> list[str]:
        """Every bound this phase exceeded."""
        failed = [f"{self.name}: {self.turns - self.ended} turns without turn.end"] * (
            self.ended < self.turns
        )
        failed += [f"{self.name}: {self.errors} error events"] * (self.errors > 0)
        for name in BOUNDS:
            figure: dict[str, Any] = getattr(self, name)
            if figure["growth"] > figure["bound"]:
                failed.append(f"{self.name}: {name} grew by {figure['growth']} > {figure['bound']}")
        return failed


@dataclass(frozen=True, slots=True)
class FaultResult:
    """One fault injected at a turn's first audio, and what came of it."""

    fault: str
    expected: str
    outcome: str
    reconnects: int  # new connections through the proxy during the turn
    in_order: bool  # audio events never went back to an earlier segment
    no_repeat: bool  # each segment's audio is a prefix of its clean run (exact when resumed)
    to_error_s: float | None  # from the fault to the turn's error event, if any
    to_end_s: float  # from the fault to turn.end
    within_s: float | None  # the bound on to_end_s (None: reported only)
    next_turn_ok: bool  # the clean turn after it spoke every segment exactly

    @property
    def ok(self) -> bool:
        """The documented outcome, in time, nothing twice or out of order, and then healthy."""
        in_time = self.within_s is None or self.to_end_s <= self.within_s
        sound = self.in_order and self.no_repeat and self.next_turn_ok
        return self.outcome == self.expected and in_time and sound


def outcome(record: TurnRecord, reconnects: int, exact: bool) -> str:
    """``resumed``/``delayed`` (every segment byte-exact, with or without a reconnect), or the
    typed error the turn ended on (``tts_unavailable: TTSTimeout``; a notice such as
    ``tts_reconnecting`` may have come first), or what went wrong."""
    if not record.ended:
        return "no turn.end"
    if record.errors:
        code, message, _ = record.errors[-1]
        kind = ERROR_TYPE.search(message)
        return f"{code}: {kind.group(1) if kind else message}"
    if not exact:
        return "audio differs from the clean run"
    return "resumed" if reconnects else "delayed"
