"""Each report writer renders its committed JSON (docs/benchmarks/) to its committed Markdown.

The reports are measurements and are not regenerated; their writers are split into a function
per section. Rendering the committed figures again must give the committed text byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.latency import report as latency_report
from bench.latency import segmenter_bench, streaming_synthesis, voice_to_voice_report
from bench.reliability import report as reliability_report
from bench.reliability.stats import FaultResult, Sample, SoakStats
from bench.speech import normalization, torch_report

ROOT = Path(__file__).resolve().parents[2]
REPORTS = ROOT / "docs" / "benchmarks"


def _reliability(result: dict[str, Any]) -> str:
    """The soak phases and faults back from their JSON, then the Markdown."""
    phases = [
        SoakStats(
            **{k: v for k, v in p.items() if k not in ("failures", "samples")},
            samples=[Sample(**s) for s in p["samples"]],
        )
        for p in result["soak"]
    ]
    faults = [FaultResult(**{k: v for k, v in f.items() if k != "ok"}) for f in result["faults"]]
    meta = {k: v for k, v in result.items() if k not in ("bounds", "soak", "faults")}
    return reliability_report.markdown(phases, faults, meta)


CASES: dict[str, tuple[Callable[[dict[str, Any]], str], str, Path]] = {
    "torch_engine_speech": (
        torch_report.markdown,
        "torch_engine_speech.json",
        REPORTS / "torch_engine_speech.md",
    ),
    "agent_latency": (
        latency_report.markdown,
        "agent_latency.json",
        REPORTS / "agent_latency.md",
    ),
    "voice_to_voice": (
        voice_to_voice_report.markdown,
        "voice_to_voice.json",
        REPORTS / "voice_to_voice.md",
    ),
    "segmenter": (segmenter_bench.markdown, "segmenter.json", REPORTS / "segmenter.md"),
    "streaming_synthesis": (
        streaming_synthesis.markdown,
        "streaming_synthesis.json",
        REPORTS / "streaming_synthesis.md",
    ),
    "normalization": (normalization.report, "normalization.json", REPORTS / "normalization.md"),
    "reliability": (_reliability, "reliability.json", REPORTS / "reliability.md"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_committed_figures_render_to_the_committed_text(name: str) -> None:
    render, figures, expected = CASES[name]
    result = json.loads((REPORTS / figures).read_text(encoding="utf-8"))
    assert render(result) == expected.read_text(encoding="utf-8")
