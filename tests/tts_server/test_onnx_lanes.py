"""The ONNX engine's lanes: which session a run takes, and a run's interrupt."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from tts_server.engines.onnx.lanes import LaneModels, Lanes


@dataclass
class Options:
    """onnxruntime's ``RunOptions``, as far as the lanes use them."""

    terminate: bool = False


def lanes(*models: LaneModels[str]) -> Lanes[str]:
    return Lanes(list(models), Options)


def test_a_lane_alone_runs_wide_and_beside_another_narrow() -> None:
    both = lanes(LaneModels("wide 0", "narrow 0"), LaneModels("wide 1", "narrow 1"))
    with both.running(0) as (alone, _):
        assert alone == "wide 0"
        with both.running(1) as (beside, _):
            assert beside == "narrow 1"
    with both.running(1) as (after, _):
        assert after == "wide 1"  # the other lane's run has ended


def test_a_lane_alone_runs_narrow_while_the_engine_is_crowded() -> None:
    """Another listener's reply is under way, between two of its runs: the lane is alone now,
    and will not be for long."""
    both = lanes(LaneModels("wide 0", "narrow 0"), LaneModels("wide 1", "narrow 1"))
    with both.running(0, crowded=True) as (model, _):
        assert model == "narrow 0"
    with both.running(0, crowded=False) as (model, _):
        assert model == "wide 0"


def test_a_brief_run_is_not_counted_by_a_run_that_starts_beside_it() -> None:
    """A text side (brief) running when a window starts on the other lane: the window takes
    every thread, and keeps them after the text side has ended."""
    both = lanes(LaneModels("wide 0", "narrow 0"), LaneModels("wide 1", "narrow 1"))
    with both.running(1, brief=True) as (text_side, _):
        assert text_side == "wide 1"  # alone
        with both.running(0) as (window, _):
            assert window == "wide 0"
    with both.running(0) as (window, _):
        with both.running(1, brief=True) as (text_side, _):
            assert (window, text_side) == ("wide 0", "narrow 1")  # it counts what runs
        with both.running(1, brief=True) as (_, options):
            both.interrupt(1)  # a brief run can be interrupted as any other
            assert options.terminate
    with both.running(1, brief=True) as (text_side, _), both.running(0, brief=True) as (other, _):
        assert (text_side, other) == ("wide 1", "narrow 0")
    with both.running(0, brief=True, crowded=True) as (text_side, _):
        assert text_side == "narrow 0"


def test_a_lane_without_a_narrow_session_runs_wide_beside_another() -> None:
    both = lanes(LaneModels("wide 0"), LaneModels("wide 1", "narrow 1"))
    with both.running(1) as (first, _), both.running(0, crowded=True) as (second, _):
        assert (first, second) == ("wide 1", "wide 0")


def test_a_run_that_fails_still_frees_its_lane() -> None:
    both = lanes(LaneModels("wide 0", "narrow 0"), LaneModels("wide 1", "narrow 1"))
    with pytest.raises(RuntimeError), both.running(0):
        raise RuntimeError("the model failed")
    with both.running(1) as (model, _):
        assert model == "wide 1"


def test_an_interrupt_terminates_only_that_lanes_run_in_flight() -> None:
    both = lanes(LaneModels("wide 0", "narrow 0"), LaneModels("wide 1", "narrow 1"))
    both.interrupt(0)  # nothing in flight: nothing to do
    with both.running(0) as (_, first), both.running(1) as (_, second):
        both.interrupt(1)
        assert (first.terminate, second.terminate) == (False, True)
    with both.running(1) as (_, later):
        assert not later.terminate  # each run has options of its own


def test_two_lanes_starting_together_never_both_run_wide() -> None:
    both = lanes(LaneModels("wide 0", "narrow 0"), LaneModels("wide 1", "narrow 1"))

    def run(lane: int, ready: threading.Barrier, taken: threading.Barrier, out: list[str]) -> None:
        ready.wait()
        with both.running(lane) as (model, _):
            out.append(model)
            taken.wait()  # both runs in flight at once

    for _ in range(200):
        ready, taken, models = threading.Barrier(2), threading.Barrier(2), []
        threads = [
            threading.Thread(target=run, args=(lane, ready, taken, models)) for lane in (0, 1)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(m.split()[0] for m in models) == ["narrow", "wide"]


def test_an_engine_needs_a_lane() -> None:
    with pytest.raises(ValueError, match=r"^an engine needs at least one lane$"):
        lanes()
    assert len(lanes(LaneModels("wide 0"), LaneModels("wide 1"))) == 2
