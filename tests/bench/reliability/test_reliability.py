"""The reliability benchmark: its verdicts on synthetic figures, and one real ``--quick`` run."""

from __future__ import annotations

import json
from pathlib import Path

from agent.config import AgentConfig
from agent.core.service import VoiceAgent
from agent.requests import TurnRequest
from bench.reliability.report import markdown
from bench.reliability.run import main
from bench.reliability.stats import BOUNDS, FaultResult, Sample, SoakStats, TurnRecord, outcome


def record(last: str, errors: list[tuple[str, str, float]] | None = None) -> TurnRecord:
    return TurnRecord(last=last, first_audio_s=0.1, total_s=1.0, errors=errors or [])


def fault(**changes: object) -> FaultResult:
    fields: dict[str, object] = {
        "fault": "drop",
        "expected": "resumed",
        "outcome": "resumed",
        "reconnects": 1,
        "in_order": True,
        "no_repeat": True,
        "to_error_s": None,
        "to_end_s": 0.5,
        "within_s": 2.0,
        "next_turn_ok": True,
    }
    return FaultResult(**(fields | changes))  # type: ignore[arg-type]


def test_a_turn_outcome_is_resumed_delayed_or_its_typed_error() -> None:
    ended = record("turn.end")
    assert outcome(ended, reconnects=1, exact=True) == "resumed"
    assert outcome(ended, reconnects=0, exact=True) == "delayed"
    assert outcome(ended, reconnects=1, exact=False) == "audio differs from the clean run"
    message = "speech is unavailable (TTSTimeout: no reply in 15 s); text continues"
    failed = record("turn.end", [("tts_unavailable", message, 16.0)])
    assert outcome(failed, reconnects=3, exact=False) == "tts_unavailable: TTSTimeout"
    assert outcome(record("audio.delta"), 1, True) == "no turn.end"


def test_a_fault_is_ok_only_as_documented_in_time_once_and_then_healthy() -> None:
    assert fault().ok and fault(within_s=None, to_end_s=99.0).ok
    assert not fault(outcome="delayed").ok
    assert not fault(to_end_s=2.5).ok
    assert not fault(no_repeat=False).ok and not fault(in_order=False).ok
    assert not fault(next_turn_ok=False).ok


def test_a_leak_of_one_descriptor_per_turn_exceeds_the_bound() -> None:
    turns = [record("turn.end") for _ in range(100)]
    steady = [Sample(n, 20, 10, 120.0) for n in (25, 50, 75, 100)]
    assert SoakStats.of("steady", 1, turns, steady).failures() == []
    leaking = [Sample(n, 20 + n, 10, 120.0) for n in (25, 50, 75, 100)]
    stats = SoakStats.of("leaking", 1, turns, leaking)
    assert stats.fds["growth"] == 75 > BOUNDS["fds"]
    assert stats.failures() == [f"leaking: fds grew by 75 > {BOUNDS['fds']}"]
    unfinished = [*turns[:99], record("error", [("llm_failed", "x", 0.1)])]
    assert SoakStats.of("cut", 1, unfinished, steady).failures() == [
        "cut: 1 turns without turn.end",
        "cut: 1 error events",
    ]


def test_a_quick_run_holds_every_bound_and_writes_both_files(tmp_path: Path) -> None:
    assert main(["--quick", "--out", str(tmp_path)]) == 0
    saved = json.loads((tmp_path / "reliability.json").read_text())
    assert saved["mode"] == "quick" and saved["bounds"] == BOUNDS
    assert [p["turns"] == p["ended"] for p in saved["soak"]] == [True, True]
    outcomes = {f["expected"] for f in saved["faults"]}
    assert {"resumed", "delayed", "tts_unavailable: TTSTimeout"} <= outcomes
    assert all(f["ok"] for f in saved["faults"]) and len(saved["faults"]) == 9
    text = (tmp_path / "reliability.md").read_text()
    assert "## Soak" in text and "## Faults between the agent and the TTS server" in text
    assert "**Bounds: all held.**" in text


def test_the_report_names_what_exceeded_a_bound() -> None:
    turns = [record("turn.end")]
    phase = SoakStats.of("one", 1, turns, [Sample(1, 20, 10, 100.0), Sample(2, 20, 10, 200.0)])
    meta = {"mode": "full", "machine": "m", "load_before": 0.1, "wall_s": 1.0}
    meta["plan"] = {"tokens_per_second": 400.0, "warmup": 25}
    text = markdown([phase], [fault(outcome="delayed")], meta)
    assert f"exceeded: ['one: rss_mb grew by 100.0 > {BOUNDS['rss_mb']}', 'drop']" in text
    assert "| drop | resumed | delayed | 1 | - | 0.50 | 2.00 | yes | ok | **no** |" in text


async def test_a_conversation_keeps_no_record_of_every_past_turn() -> None:
    voice_agent = VoiceAgent(AgentConfig(model="demo", tts_url="ws://127.0.0.1:9/ws"))
    try:
        agent = voice_agent.conversations.get("long").agent
        agent.model.update_config(sentences=1, tokens_per_second=2000, first_token_delay_s=0)  # type: ignore[attr-defined]
        for n in range(5):  # speech is down (nothing listens on port 9): text-only turns
            turn = await voice_agent.start(TurnRequest(f"Turn {n}"), "long")
            assert [e.type async for e in turn.run()][-1] == "turn.end"
        metrics = agent.event_loop_metrics  # type: ignore[attr-defined]
        assert len(metrics.agent_invocations) <= 1 and len(metrics.traces) <= 1
    finally:
        await voice_agent.aclose()
