"""The window plan: every frame kept once, in order, with context clipped at the edges; the
settings it is read from, and the order its windows are decoded in."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tts_server.engines.pace import PACE_MARGIN, DecodeRate, PlaybackClock
from tts_server.engines.windows import (
    CROSSFADE_SAMPLES,
    MIN_WINDOWED_FRAMES,
    SAMPLES_PER_FRAME,
    WINDOW_DEFAULTS,
    Window,
    WindowPlan,
    speech_span,
    window_plan,
    worth_windows,
)
from tts_server.settings import Settings, parse_settings


@pytest.mark.parametrize("frames", [0, 1, 7, 8, 9, 15, 16, 47, 48, 49, 55, 56, 57, 200])
def test_the_windows_cover_each_frame_once_in_order(frames: int) -> None:
    windows = WindowPlan(first=8, size=40, context=16, min_last=8, growth=5).windows(frames)
    kept = [f for w in windows for f in range(w.start, w.stop)]
    assert kept == list(range(frames))
    assert all(w.frames > 0 for w in windows)


def test_the_first_window_is_short_and_the_rest_are_long() -> None:
    windows = WindowPlan(first=8, size=40, context=16, min_last=8, growth=5).windows(130)
    assert [(w.start, w.stop) for w in windows] == [(0, 8), (8, 48), (48, 88), (88, 130)]


def test_a_short_last_window_joins_the_one_before_it() -> None:
    plan = WindowPlan(first=8, size=40, context=16, min_last=8, growth=5)
    assert [(w.start, w.stop) for w in plan.windows(12)] == [(0, 12)]
    assert [(w.start, w.stop) for w in plan.windows(16)] == [(0, 8), (8, 16)]
    assert [(w.start, w.stop) for w in plan.windows(55)] == [(0, 8), (8, 55)]
    assert [(w.start, w.stop) for w in plan.windows(56)] == [(0, 8), (8, 48), (48, 56)]


def test_context_is_clipped_at_the_sentence_edges() -> None:
    windows = WindowPlan(first=8, size=40, context=16, min_last=0, growth=5).windows(60)
    assert windows == [Window(0, 8, 0, 16), Window(8, 48, 8, 12), Window(48, 60, 32, 0)]
    assert (windows[1].first, windows[1].last) == (0, 60)


def test_a_window_takes_before_it_the_context_it_cannot_have_after_it() -> None:
    windows = WindowPlan(first=8, size=40, context=16, min_last=8, growth=5).windows(130)
    assert [(w.left, w.right) for w in windows] == [(0, 16), (8, 16), (16, 16), (32, 0)]
    assert WindowPlan(first=8, size=40, context=16, growth=5).windows(90)[-1] == Window(
        48, 90, 32, 0
    )


@pytest.mark.parametrize("frames", [1, 12, 20, 21, 27, 28, 29, 100])
def test_the_first_window_starts_counting_after_the_leading_frames(frames: int) -> None:
    windows = WindowPlan(first=8, size=40, context=16, min_last=8, growth=5).windows(
        frames, lead=12
    )
    assert windows[0].stop == (20 if frames >= 28 else frames)  # else one window, merged
    kept = [f for w in windows for f in range(w.start, w.stop)]
    assert kept == list(range(frames))


def test_the_kept_samples_skip_the_left_context() -> None:
    window = Window(start=8, stop=48, left=8, right=12)
    assert window.kept_samples == slice(8 * SAMPLES_PER_FRAME, 48 * SAMPLES_PER_FRAME)
    audio = list(range((window.last - window.first) * SAMPLES_PER_FRAME))
    assert len(audio[window.kept_samples]) == window.frames * SAMPLES_PER_FRAME


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"first": 0}, "at least one frame"),
        ({"size": 0}, "at least one frame"),
        ({"context": -1}, "cannot be negative"),
        ({"min_last": -1}, "cannot be negative"),
        ({"growth": 0.5}, "cannot shrink"),
        ({"growth": float("nan")}, "cannot shrink"),
    ],
)
def test_a_bad_plan_is_refused_in_words(kwargs: dict[str, float], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        WindowPlan(**{"first": 8, "size": 40, "context": 16, **kwargs})


def test_a_negative_length_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot have -1 frames"):
        WindowPlan(8, 40, 16).windows(-1)
    with pytest.raises(ValueError, match="-1 of them leading"):
        WindowPlan(8, 40, 16).windows(10, lead=-1)


def test_later_windows_grow_by_the_factor_up_to_the_largest_size() -> None:
    plan = WindowPlan(first=8, size=40, context=16, min_last=8, growth=2)
    windows = plan.windows(200, lead=12)
    assert [w.frames for w in windows] == [20, 16, 32, 40, 40, 40, 12]
    kept = [f for w in windows for f in range(w.start, w.stop)]
    assert kept == list(range(200))


def test_each_window_decodes_in_less_time_than_the_audio_before_it_plays() -> None:
    """At decode cost per frame under a fifth of a frame's playing time (about a sixth on this
    machine's ONNX engine), a growth of 2 never lets the player run dry."""
    plan = WindowPlan(first=8, size=80, context=8, min_last=8, growth=2)
    windows = plan.windows(400, lead=12)
    buffered = windows[0].frames - 12  # the lead is silence, trimmed away
    for window in windows[1:]:
        assert (window.last - window.first) / 5 <= buffered
        buffered += window.frames


def test_the_last_window_starts_by_the_last_words_first_frame() -> None:
    plan = WindowPlan(first=8, size=40, context=4, min_last=0, growth=2)
    assert [w.start for w in plan.windows(60)] == [0, 8, 24, 56]
    merged = plan.windows(60, last_from=30)
    assert [(w.start, w.stop) for w in merged] == [(0, 8), (8, 24), (24, 60)]
    assert merged[-1].right == 0 and merged[-1].left == 8  # the context it cannot have after
    assert plan.windows(60, last_from=60) == plan.windows(60)
    assert [w.start for w in plan.windows(60, last_from=24)] == [0, 8, 24]  # starts at it
    assert [(w.start, w.stop) for w in plan.windows(60, last_from=0)] == [(0, 60)]


def test_only_the_span_is_kept_with_context_after_it_and_none_before_it() -> None:
    plan = WindowPlan(first=8, size=240, context=4, min_last=8, growth=3)
    windows = plan.windows(180, lead=12, span=(6, 150))
    assert [(w.start, w.stop) for w in windows] == [(6, 20), (20, 44), (44, 116), (116, 150)]
    # the first window's margin of silence is its context: nothing decoded before the span
    assert (windows[0].left, windows[0].right, windows[0].decoded_frames) == (0, 4, 18)
    assert windows[1].left == 4 and windows[-1].last == 154  # context after the span
    assert plan.windows(180, lead=12, span=(0, 180)) == plan.windows(180, lead=12)
    assert plan.windows(180, span=(30, 30)) == []


def test_the_span_never_cuts_off_the_last_word() -> None:
    plan = WindowPlan(first=8, size=40, context=4, min_last=0, growth=3)
    windows = plan.windows(180, lead=12, last_from=160, span=(6, 150))
    assert windows[-1].start <= 160 < windows[-1].stop == 161


@pytest.mark.parametrize("span", [(-1, 10), (10, 9), (0, 181)])
def test_a_span_outside_the_sentence_is_refused(span: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="span"):
        WindowPlan(8, 40, 4).windows(180, span=span)


def test_the_speech_span_is_where_the_predicted_energy_passes_with_a_margin() -> None:
    silence, speech = np.full(2 * 12, -9.0), np.full(2 * 30, 5.0)
    energy = np.concatenate([silence, speech, np.full(2 * 25, -9.0)])
    assert speech_span(energy) == (8, 46)  # frames 12-41 speak; 4 frames either side
    assert speech_span(energy, margin=0) == (12, 42)
    assert speech_span(energy, margin=20) == (0, 62)  # clipped to the sentence
    energy[2 * 50 + 1] = -5.0  # one step of a frame is enough
    assert speech_span(energy, margin=0) == (12, 51)
    assert speech_span(np.full(40, -9.0)) is None
    assert speech_span(np.full(40, -6.0)) is None  # passing means above it
    assert speech_span([-9.0, -9.0, 0.0, -9.0, -9.0]) == (0, 2)  # a half step at the end: none
    with pytest.raises(ValueError, match="margin"):
        speech_span(energy, margin=-1)


def test_the_smallest_plan_is_one_frame_at_a_time_without_context() -> None:
    windows = WindowPlan(first=1, size=1, context=0, min_last=0).windows(3)
    assert [(w.start, w.stop, w.left, w.right) for w in windows] == [
        (0, 1, 0, 0),
        (1, 2, 0, 0),
        (2, 3, 0, 0),
    ]


def test_a_window_costs_its_frames_and_its_context_and_keeps_a_seam_past_its_end() -> None:
    window = Window(start=8, stop=48, left=8, right=12)
    assert window.decoded_frames == 8 + 40 + 12
    kept_stop = 48 * SAMPLES_PER_FRAME
    assert window.seam == slice(kept_stop, kept_stop + CROSSFADE_SAMPLES)
    assert CROSSFADE_SAMPLES == 240  # 10 ms at 24 kHz


def test_a_whole_sentence_is_one_window_without_context() -> None:
    assert Window.whole(90) == Window(0, 90, 0, 0)
    assert WindowPlan.whole(90).windows(90, lead=12) == [Window.whole(90)]
    assert WindowPlan.whole(90) == WindowPlan(first=90, size=90, context=0, min_last=0)


def test_only_a_sentence_with_enough_speech_after_its_lead_is_worth_windows() -> None:
    assert MIN_WINDOWED_FRAMES == 64
    assert worth_windows(12 + 64, 12)
    assert not worth_windows(12 + 63, 12)
    assert worth_windows(64, 0) and not worth_windows(63, 0)


def test_each_engine_has_its_own_defaults_which_the_settings_quote() -> None:
    assert window_plan(Settings()) == WindowPlan(8, 240, 4, growth=3.0)
    assert window_plan(Settings(engine="torch")) is None
    assert window_plan(Settings(engine="torch", windows=True)) == WindowPlan(8, 40, 16, growth=5.0)
    helps = {f.name: f.metadata["option"].help for f in dataclasses.fields(Settings)}
    for engine, default in WINDOW_DEFAULTS.items():
        assert f"{engine} {default.size}" in helps["window_size"]
        assert f"{engine} {default.context}" in helps["window_context"]
        assert f"{engine} {default.growth:g}" in helps["window_growth"]
        assert f"default: {default.first}" in helps["window_first"]
        assert f"{'on' if default.on else 'off'} for {engine}" in helps["windows"]


def test_a_setting_given_wins_over_the_engines_default() -> None:
    argv = ["--window-first", "4", "--window-size", "60", "--window-context", "2"]
    settings = parse_settings([*argv, "--window-growth", "2"], env={})
    assert window_plan(settings) == WindowPlan(4, 60, 2, growth=2.0)
    assert window_plan(Settings(window_first=4)) == WindowPlan(4, 240, 4, growth=3.0)
    assert window_plan(Settings(window_size=60)) == WindowPlan(8, 60, 4, growth=3.0)
    assert window_plan(Settings(window_context=0)) == WindowPlan(8, 240, 0, growth=3.0)
    assert window_plan(Settings(window_growth=1.0)) == WindowPlan(8, 240, 4, growth=1.0)
    assert window_plan(Settings(windows=False)) is None
    assert window_plan(Settings(engine="torch", window_first=4)) is None  # still off


async def test_the_windows_are_decoded_in_order_each_once_the_one_before_is_taken() -> None:
    plan = WindowPlan(first=8, size=40, context=4, min_last=0, growth=2)
    asked: list[Window] = []

    async def decode(window: Window) -> int:
        asked.append(window)
        return window.start

    steps = plan.decoded(decode, 60, lead=0, last_from=30, span=(0, 60))
    step = await anext(steps)
    assert step == (Window(0, 8, 0, 4), 0, False) and len(asked) == 1  # nothing decoded ahead
    rest = [step async for step in steps]
    assert asked == plan.windows(60, last_from=30)
    assert [(w.start, audio, last) for w, audio, last in rest] == [(8, 8, False), (24, 24, True)]


async def test_a_sentence_without_frames_decodes_nothing() -> None:
    async def decode(window: Window) -> Window:
        raise AssertionError(f"{window} decoded")

    assert [step async for step in WindowPlan(8, 40, 4).decoded(decode, 0)] == []


@pytest.mark.parametrize(
    ("step", "end", "last_from", "stop"),
    [
        (40, 100, None, 40),  # room after it: as paced
        (95, 100, None, 92),  # 5 frames would be left: the last window is min_last instead
        (100, 100, None, 100),  # it reaches the end exactly: the last window
        (120, 100, None, 100),  # paced past the end: the rest
        (50, 100, 30, 30),  # past the last word's first frame: the last window starts there
        (12, 16, None, 8),  # cut at min_last before the end, still first frames long
        (8, 12, None, 12),  # a cut would leave it under first frames: merged whole
    ],
)
def test_a_paced_window_merged_past_its_pace_stops_where_the_last_is_smallest(
    step: int, end: int, last_from: int | None, stop: int
) -> None:
    """``WindowPlan._paced_stop``: a paced window that the ``min_last`` or last-word merge
    would make larger than its pace stops instead where the last window is smallest."""
    plan = WindowPlan(first=8, size=240, context=4, min_last=8)
    assert plan._paced_stop(0, step, end, last_from) == stop
    assert plan._paced_stop(10, step, end + 10, None if last_from is None else last_from + 10) == (
        stop + 10
    )


def test_a_listener_without_a_lead_is_a_plan_too() -> None:
    assert WindowPlan(first=8, size=40, context=4, listener_lead_s=0.0).listener_lead_s == 0.0


def test_a_sentences_silent_pad_is_paid_once_by_the_window_that_grows_the_buffer() -> None:
    """With 0.6 s buffered at 12 ms a frame, the window that adds to the buffer even with the
    margin, its 7 frames of pad paid once, is 31 frames; without the pad, 23 fit."""
    plan = WindowPlan(first=8, size=240, context=4)
    assert plan.paced(0.6, 0.012, 1.3, silent=7) == 31
    assert plan.paced(0.6, 0.012, 1.3, silent=0) == 23


async def test_unpaced_windows_are_the_static_plans_and_teach_the_rate_no_opening() -> None:
    """With a rate and no listener's clock: the static plan (no leading pad unless given), each
    window's time learned, none of them as a reply's opening."""
    now = [0.0]
    rate = DecodeRate(0.01, now=lambda: now[0])
    plan = WindowPlan(first=8, size=40, context=4, growth=2)

    async def decode(window: Window) -> Window:
        now[0] += 3 * rate.seconds_per_frame * window.decoded_frames  # three times as slow
        return window

    windows = [w async for w, _, _ in plan.decoded(decode, 100, rate=rate)]
    assert windows == plan.windows(100)
    assert rate.margin > PACE_MARGIN  # the misses were learned
    assert rate.opening_seconds_per_frame == rate.seconds_per_frame  # as no opening's


async def test_a_pad_as_long_as_the_largest_window_leaves_one_frame_of_speech_in_it() -> None:
    plan = WindowPlan(first=1, size=8, context=0, min_last=0)

    async def decode(window: Window) -> Window:
        return window

    paced = plan.decoded(decode, 20, lead=7, clock=PlaybackClock(), rate=DecodeRate(0.005))
    first, _, _ = await anext(paced)
    assert (first.start, first.stop) == (0, 8)
