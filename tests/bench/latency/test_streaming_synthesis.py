"""The streaming-synthesis benchmark's parts: the player model, alignment, seams, the report."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from bench.latency.streaming_synthesis import (
    Heard,
    aligned,
    cases,
    hear,
    largest_step,
    markdown,
    plot,
    report,
    seam_step,
)
from tts_server.engines import Engine
from tts_server.engines.timings import Chunk


def test_alignment_undoes_a_shift_either_way() -> None:
    reference = np.random.default_rng(0).normal(size=4000).astype(np.float32)
    late = np.concatenate([np.zeros(30, np.float32), reference])
    early = reference[40:]
    np.testing.assert_array_equal(aligned(late, reference)[:3900], reference[:3900])
    np.testing.assert_array_equal(aligned(early, reference)[40:3900], reference[40:3900])


def test_the_seam_step_is_the_jump_between_chunks_only() -> None:
    chunks = [np.array([0.0, 0.9, 0.1]), np.array([0.4, 0.0]), np.array([0.0])]
    assert seam_step(chunks) == pytest.approx(0.3)
    assert largest_step(np.concatenate(chunks)) == pytest.approx(0.9)


def test_the_demo_case_is_the_demo_replys_sentences() -> None:
    demo = cases()["demo reply"]
    assert len(demo) == 4 and cases()["demo, first sentence"] == demo[:1]


class LateEngine:
    """Says each text as two 0.1 s chunks, the second ``late_s`` after the first."""

    def __init__(self, late_s: float) -> None:
        self.late_s = late_s

    def prepare(self, text: str) -> str:
        return text

    async def synthesize(self, text: str) -> AsyncIterator[Chunk]:
        tenth = np.full(2_400, 0.1, np.float32)
        yield Chunk(tenth, ())
        await asyncio.sleep(self.late_s)
        yield Chunk(tenth, ())


async def test_the_player_model_counts_a_chunk_that_comes_late() -> None:
    late = await hear(LateEngine(0.3), ["One.", "Two."])  # type: ignore[arg-type]
    assert late.underruns == 2 and late.worst_gap_s >= 0.2  # 0.3 s for 0.1 s of audio, twice
    assert 0 < late.first_s <= late.total_s and late.audio.size == 4 * 2_400
    on_time = await hear(LateEngine(0.0), ["One.", "Two."])  # type: ignore[arg-type]
    assert on_time.underruns == 0 and on_time.worst_gap_s == 0.0


async def test_the_player_model_plays_the_real_engines_chunks(engine: Engine) -> None:
    heard = await hear(engine, ["One short sentence.", "And a second one."])
    assert 0 < heard.first_s <= heard.total_s
    assert heard.audio.size == sum(chunk.size for chunk in heard.chunks) > 0


def _heard(first: float, total: float, gap: float, chunks: int) -> Heard:
    audio = np.sin(np.linspace(0, 400, 24_000)).astype(np.float32)
    return Heard(first, total, int(gap > 0), gap, list(np.array_split(audio, chunks)))


def test_the_report_gives_ratios_to_the_whole_graph_and_the_quality_of_each_plan() -> None:
    case = {"whole": _heard(1.0, 1.0, 0.0, 1), "a plan": _heard(0.25, 1.5, 0.1, 4)}
    names = ("12 words", "30 words", "demo, first sentence", "demo reply")
    rounds = [dict.fromkeys(names, case)] * 3
    result = report(rounds, {"whole": 0.01, "a plan": 0.02}, (0.5, 0.4, 0.3), runs=3)
    row = result["cases"]["12 words"]["a plan"]
    assert (row["first_over_whole"], row["total_over_whole"]) == (0.25, 1.5)
    assert (row["runs_with_underrun"], row["worst_underrun_ms"], row["chunks"]) == (3, 100.0, 4)
    assert result["quality"]["a plan"]["log_spectral_distance_db"] == [0.0, 0.0]
    assert (result["word_error_rate_whole"], result["quality"]["a plan"]["word_error_rate"]) == (
        0.01,
        0.02,
    )
    page = markdown(result)
    assert "| a plan | 250.0 (250.0) | 1500.0 | 0.25 | 1.5 | 3 of 3 | 100.0 | 4 |" in page
    assert "The torch engine" not in page


def test_the_torch_engines_figures_get_their_own_section_and_row_of_plots(tmp_path: Path) -> None:
    case = {"whole": _heard(2.0, 2.0, 0.0, 1), "its plan": _heard(0.8, 4.4, 0.0, 5)}
    names = ("12 words", "30 words", "demo, first sentence", "demo reply")
    rounds = [dict.fromkeys(names, case)] * 2
    result = report(rounds, {"whole": 0.01, "its plan": 0.02}, (0.5, 0.4, 0.3), runs=2)
    result["torch"] = report(rounds, {"whole": 0.03, "its plan": 0.04}, (0.5, 0.4, 0.3), 2)
    page = markdown(result)
    torch_part = page[page.index("## The torch engine") :]
    assert "### 12 words" in torch_part and "| its plan | 800.0 (800.0) | 4400.0 | 0.4 | 2.2 |" in (
        torch_part
    )
    assert "(whole: 0.03)" in torch_part and "(whole: 0.01)" not in torch_part
    plot(result, tmp_path / "two.png")
    del result["torch"]
    plot(result, tmp_path / "one.png")
    two, one = (tmp_path / "two.png").read_bytes(), (tmp_path / "one.png").read_bytes()
    assert two[:4] == one[:4] == b"\x89PNG"
    assert int.from_bytes(two[20:24], "big") > int.from_bytes(one[20:24], "big")  # taller
