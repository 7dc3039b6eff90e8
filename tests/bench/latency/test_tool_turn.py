"""``python -m bench.latency.tool_turn``: the silence around a tool call, computed by hand, and a
quick real run against a real local TTS server on the fast fake engine (the benchmark's
plumbing and the consistency of its figures are under test, not the model's speed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.testing.tool_model import AFTER, BEFORE
from bench.latency.stats import audio_record
from bench.latency.tool_turn import (
    FILLER,
    Chunk,
    TurnFailed,
    cases,
    chunks,
    figures,
    main,
    parse,
    silence,
)
from bench.latency.tool_turn_report import FIGURES
from tests.conftest import start_server
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

MS_100 = 4800  # bytes of PCM in 100 ms


# --- the silence, by hand ---------------------------------------------------------------------


def test_an_answer_that_comes_while_the_text_before_plays_leaves_no_silence() -> None:
    heard = silence(
        [Chunk(100, 500, "before"), Chunk(110, 500, "before"), Chunk(400, 300, "answer")]
    )
    assert heard == {
        "before_end_ms": 1100,
        "answer_start_ms": 1100,  # it waits for the audio before it
        "wait_ms": 0,
        "silence_ms": 0,
        "filler_audio_ms": 0,
    }


def test_an_answer_after_the_audio_ran_out_is_heard_as_silence() -> None:
    heard = silence(
        [Chunk(100, 500, "before"), Chunk(110, 500, "before"), Chunk(1500, 300, "answer")]
    )
    assert (heard["before_end_ms"], heard["answer_start_ms"]) == (1100, 1500)
    assert heard["wait_ms"] == heard["silence_ms"] == 400


def test_the_audio_before_ends_later_when_it_ran_dry() -> None:
    heard = silence(
        [Chunk(100, 500, "before"), Chunk(800, 500, "before"), Chunk(900, 300, "answer")]
    )
    assert heard["before_end_ms"] == 1300  # not first audio + length (1100): it stalled at 600
    assert (heard["wait_ms"], heard["silence_ms"]) == (0, 0)  # that stall is not the tool's


def test_a_filler_fills_part_of_the_wait() -> None:
    played = [Chunk(0, 1000, "before"), Chunk(1200, 500, "filler"), Chunk(1600, 300, "answer")]
    heard = silence(played)
    assert (heard["before_end_ms"], heard["answer_start_ms"]) == (1000, 1700)
    assert (heard["wait_ms"], heard["silence_ms"], heard["filler_audio_ms"]) == (700, 200, 500)


def test_a_filler_said_while_the_text_before_plays_delays_the_answer() -> None:
    played = [Chunk(0, 1000, "before"), Chunk(300, 500, "filler"), Chunk(1100, 300, "answer")]
    heard = silence(played)
    assert (heard["answer_start_ms"], heard["wait_ms"], heard["silence_ms"]) == (1500, 500, 0)


def test_silence_needs_audio_before_and_after_the_tool() -> None:
    with pytest.raises(ValueError, match="no audio before or after the tool"):
        silence([Chunk(0, 100, "before"), Chunk(50, 100, "filler")])


def turn_events(filler: bool = False) -> list[tuple[float, dict[str, Any]]]:
    """A turn's timed events as the benchmark keeps them: before, [filler,] answer."""
    answer = 2 if filler else 1
    events: list[tuple[float, dict[str, Any]]] = [
        (0.0, {"type": "turn.start"}),
        (50.0, {"type": "segment", "seq": 0, "text": BEFORE}),
        (60.0, {"type": "tool.start", "name": "lookup", "id": "t1"}),
        (100.0, audio_record(0, 2 * MS_100)),
    ]
    if filler:
        events += [
            (160.0, {"type": "segment", "seq": 1, "text": FILLER}),
            (200.0, audio_record(1, MS_100)),
        ]
    done = {"type": "tool.end", "id": "t1", "name": "lookup", "status": "ok", "duration_ms": 500}
    metrics = {"type": "metrics", "tool_calls": 1, "tool_ms": 500.0}
    return [
        *events,
        (560.0, done),
        (600.0, {"type": "segment", "seq": answer, "text": AFTER}),
        (700.0, audio_record(answer, MS_100)),
        (800.0, metrics),
        (801.0, {"type": "turn.end"}),
    ]


def test_a_segment_s_part_is_where_it_was_cut_around_the_tool() -> None:
    assert chunks(turn_events(filler=True)) == [
        Chunk(100.0, 200.0, "before"),
        Chunk(200.0, 100.0, "filler"),
        Chunk(700.0, 100.0, "answer"),
    ]


def test_a_turn_s_figures() -> None:
    got = figures(turn_events(filler=True))
    assert got | {"segments": []} == {
        "first_audio_ms": 100.0,
        "tool_start_ms": 60.0,
        "tool_end_ms": 560.0,
        "tool_duration_ms": 500,
        "tool_status": "ok",
        "tool_ms": 500.0,
        "tool_calls": 1,
        "before_audio_ms": 200.0,
        "answer_arrival_ms": 700.0,
        "before_end_ms": 300.0,
        "answer_start_ms": 700.0,
        "wait_ms": 400.0,
        "silence_ms": 300.0,  # the filler played 300..400
        "filler_audio_ms": 100.0,
        "total_ms": 801.0,
        "segments": [],
        "errors": [],
    }
    assert got["segments"] == [BEFORE, FILLER, AFTER]


def test_a_turn_without_its_tool_call_fails_by_name() -> None:
    events = [e for e in turn_events() if e[1]["type"] not in ("tool.start", "tool.end")]
    events.insert(1, (10.0, {"type": "error", "code": "llm_failed", "message": "down"}))
    with pytest.raises(TurnFailed, match=r"no tool.end, tool.start \(errors: \['llm_failed'\]\)"):
        figures(events)


def test_the_cases_are_each_lookup_the_slowest_with_its_filler_and_calculate() -> None:
    chosen = cases([2000, 0, 500, 500], 1.0)
    assert [c.name for c in chosen] == [
        "lookup 0 ms",
        "lookup 500 ms",
        "lookup 2000 ms",
        "lookup 2000 ms + filler",
        "calculate",
    ]
    assert [c.filler_s for c in chosen] == [None, None, None, 1.0, None]
    assert chosen[-1].prompt == 'calculate {"expression": "12.5 * (3 + 4)"}'


@pytest.mark.parametrize(
    "flags",
    [
        ["--runs", "0"],
        ["--warmup", "-1"],
        ["--tool-ms", "-5"],
        ["--filler-s", "0"],
        ["--tokens-per-second", "0"],
        ["--first-token-ms", "-1"],
    ],
)
def test_bad_flags_are_refused(flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(flags)
    assert exited.value.code == 2 and "error:" in capsys.readouterr().err


# --- a quick real run -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fast_server() -> Iterator[ServerThread]:
    server = start_server(FakeEngine(), max_queue=16)
    yield server
    server.stop()


@pytest.mark.timeout(600)  # ten real turns; a loaded 2-core box takes a while
def test_quick_run_against_the_local_server(fast_server: ServerThread, tmp_path: Path) -> None:
    flags = ["--quick", "--tts-url", fast_server.ws_url, "--out", str(tmp_path)]
    assert main([*flags, "--tool-ms", "0", "2500", "--filler-s", "0.1"]) == 0
    report = json.loads((tmp_path / "tool_turn.json").read_text())
    # the filler waits for the words before the tool (about 1.4 s of audio) to play out
    names = ["lookup 0 ms", "lookup 2500 ms", "lookup 2500 ms + filler", "calculate"]
    assert list(report["runs"]) == list(report["summary"]) == names
    for name, (run,) in report["runs"].items():
        assert (run["tool_status"], run["tool_calls"], run["errors"]) == ("ok", 1, [])
        assert run["segments"][0] == BEFORE and AFTER in " ".join(run["segments"])
        assert run["tool_duration_ms"] == run["tool_ms"]
        # the events' order, and the player's: it can only play later than the audio came
        assert run["tool_start_ms"] <= run["tool_end_ms"] <= run["answer_arrival_ms"]
        assert run["answer_arrival_ms"] <= run["answer_start_ms"]
        assert run["answer_arrival_ms"] <= run["total_ms"]
        played_before = run["first_audio_ms"] + run["before_audio_ms"]
        assert run["before_end_ms"] >= played_before - 0.2  # rounding
        assert run["answer_start_ms"] - run["before_end_ms"] == pytest.approx(
            run["wait_ms"], abs=0.2
        )
        filled = run["filler_audio_ms"]
        assert run["wait_ms"] == pytest.approx(run["silence_ms"] + filled, abs=0.2)
        assert (filled > 0) == name.endswith("+ filler") == (FILLER in run["segments"])
    assert report["runs"]["lookup 2500 ms"][0]["tool_ms"] >= 2499  # it waited its latency
    assert "= 87.5." in report["runs"]["calculate"][0]["segments"][-1]  # the real tool's result
    for summary in report["summary"].values():
        assert set(summary) == set(FIGURES)
        assert all(set(s) == {"median", "p90"} for s in summary.values())
    assert list(report["silence_over_tool"]) == ["lookup 2500 ms"]
    filler = report["filler"]
    assert filler["filled_ms"] == pytest.approx(
        filler["silence_off_ms"] - filler["silence_on_ms"], abs=0.2
    )
    setup = report["setup"]
    assert (setup["quick"], setup["runs"], setup["lookup_ms"]) == (True, 1, [0, 2500])
    assert (setup["filler"], setup["filler_after_s"]) == (FILLER, 0.1)
    assert report["machine"]["cores"] and len(report["machine"]["load_average_at_end"]) == 3
    markdown = (tmp_path / "tool_turn.md").read_text()
    assert "## Headline (medians)" in markdown and "`os.getloadavg`" in markdown
    assert "looks nothing up" in markdown and "| lookup 2500 ms + filler |" in markdown
