"""The endpointer on speech probabilities it is given: onset, pre-roll, end of turn, the cap."""

from __future__ import annotations

import math

import pytest

from agent.config import ListeningConfig
from agent.listening.endpointer import (
    RELEASE_BELOW,
    TAIL_MS,
    Ended,
    Endpointer,
    Paused,
    Resumed,
    Started,
)
from agent.listening.settings import WINDOW_BYTES, WINDOW_MS
from agent.listening.turn_model import TurnScore

CONFIG = ListeningConfig()  # onset 64 ms, silence 500 ms, pre-roll 192 ms, cap 20 s
PAUSE = math.ceil(CONFIG.pause_ms / WINDOW_MS)  # the model is asked after 5 quiet windows (160 ms)
RECHECK = math.ceil(CONFIG.turn_recheck_ms / WINDOW_MS)  # ... and again after 7 (224 ms)
WAIT = 1000 // WINDOW_MS + 1  # an unfinished turn ends after 32 (1024 ms)
COMPLETE, UNFINISHED = TurnScore(0.91, 30.0), TurnScore(0.12, 30.0)
# complete at the first ask (0.5), not at the second (0.85): between the two bars
SURER = TurnScore((CONFIG.turn_threshold + CONFIG.turn_recheck_threshold) / 2, 30.0)
ONCE = ListeningConfig(turn_recheck_ms=0)  # the model asked once per pause


def run(probabilities: list[float], config: ListeningConfig = CONFIG) -> list[Started | Ended]:
    """Push one window per probability; each window's bytes say its index (for the pre-roll)."""
    endpointer = Endpointer(config)
    found: list[Started | Ended] = []
    for index, probability in enumerate(probabilities):
        found += endpointer.push(index.to_bytes(4, "big") * (WINDOW_BYTES // 4), probability)
    return found


def windows_of(pcm: bytes) -> list[int]:
    return [int.from_bytes(pcm[i : i + 4], "big") for i in range(0, len(pcm), WINDOW_BYTES)]


def test_speech_starts_after_the_onset_and_ends_after_the_silence() -> None:
    quiet, speech = [0.01] * 20, [0.9] * 30
    found = run(quiet + speech + [0.01] * 40)
    assert found[0] == Started(20 * WINDOW_MS)  # the first voiced window, not the onset's end
    [ended] = found[1:]
    assert isinstance(ended, Ended) and ended.reason == "silence"
    assert ended.at_ms == 50 * WINDOW_MS  # the end of the last voiced window
    assert (ended.turn, ended.complete, ended.ticket) == (None, None, None)  # no model asked
    # pre-roll (192 ms: 6 windows), the speech, then TAIL_MS of the silence
    assert windows_of(ended.pcm) == list(range(14, 50 + TAIL_MS // WINDOW_MS))


def test_the_end_of_turn_waits_for_exactly_the_configured_silence() -> None:
    silence_windows = 500 // WINDOW_MS + 1  # 16 windows: 512 ms
    assert len(run([0.9] * 10 + [0.01] * (silence_windows - 1))) == 1  # only Started
    assert len(run([0.9] * 10 + [0.01] * silence_windows)) == 2


def test_a_pause_shorter_than_the_silence_keeps_one_utterance() -> None:
    found = run([0.9] * 20 + [0.01] * 10 + [0.9] * 20 + [0.01] * 20)
    assert [type(f) for f in found] == [Started, Ended]


def test_hysteresis_keeps_speech_going_over_a_dip_under_the_threshold() -> None:
    found = run([0.9] * 10 + [0.4] * 30 + [0.01] * 20)  # 0.4: under 0.5, over the 0.35 release
    assert isinstance(found[-1], Ended) and found[-1].at_ms == 40 * WINDOW_MS


@pytest.mark.parametrize("dip", [0.36, 0.34])
def test_speech_goes_on_over_the_release_threshold_and_ends_under_it(dip: float) -> None:
    """The release threshold is 0.35 (0.5 - 0.15): a dip just over it keeps the speech going,
    one just under it is silence, and the utterance ends where the voiced windows did."""
    started, ended = run([0.9] * 10 + [dip] * 30 + [0.01] * 20)
    assert started == Started(0.0) and isinstance(ended, Ended)
    assert ended.at_ms == (40 if dip > 0.35 else 10) * WINDOW_MS


def test_a_click_shorter_than_the_onset_is_not_speech() -> None:
    assert run([0.01] * 5 + [0.9] + [0.01] * 40) == []


def test_after_a_click_the_next_speech_starts_where_it_does_with_its_own_preroll() -> None:
    found = run([0.01] * 5 + [0.9] + [0.01] * 20 + [0.9] * 10 + [0.01] * 20)
    assert found[0] == Started(26 * WINDOW_MS)  # not at the click
    assert isinstance(found[1], Ended)
    assert windows_of(found[1].pcm)[0] == 20  # the six windows before the speech, not the click


def test_a_window_exactly_at_the_threshold_is_speech_and_one_at_the_release_holds_it() -> None:
    at, release = CONFIG.vad_threshold, CONFIG.vad_threshold - RELEASE_BELOW
    started, ended = run([at] * 2 + [release] * 10 + [0.01] * 20)
    assert started == Started(0.0)  # two windows at 0.5: the onset
    assert isinstance(ended, Ended) and ended.at_ms == 12 * WINDOW_MS  # 0.35 went on


def test_the_silence_is_counted_from_the_first_quiet_window_after_a_bare_onset() -> None:
    endpointer, silence_windows = Endpointer(CONFIG), 500 // WINDOW_MS + 1
    pushed = [endpointer.push(bytes(WINDOW_BYTES), p) for p in [0.9] * 2 + [0.01] * 30]
    ends = [index for index, found in enumerate(pushed) if any(isinstance(f, Ended) for f in found)]
    assert ends == [2 + silence_windows - 1]  # the 16th quiet window, not the 15th


@pytest.mark.parametrize("turn_model", [False, True])
def test_one_window_settings_mean_one_window(turn_model: bool) -> None:
    """32 ms of onset, of silence or of the unfinished wait is one window, not two."""
    config = ListeningConfig(onset_ms=32, silence_ms=32, turn_wait_ms=32, turn_recheck_ms=0)
    endpointer = Endpointer(config, turn_model)
    assert endpointer.push(bytes(WINDOW_BYTES), 0.9) == [Started(0.0)]
    [ended] = endpointer.push(bytes(WINDOW_BYTES), 0.01)
    assert isinstance(ended, Ended) and ended.waited_ms == WINDOW_MS


def test_voiced_windows_lasting_exactly_the_onset_start_an_utterance() -> None:
    onset = CONFIG.onset_ms // WINDOW_MS  # 64 ms: two windows
    found = run([0.01] * 5 + [0.9] * onset + [0.01] * 40)
    assert found[0] == Started(5 * WINDOW_MS)
    assert isinstance(found[1], Ended) and found[1].at_ms == (5 + onset) * WINDOW_MS


def test_an_utterance_at_the_cap_is_cut_and_the_next_one_starts() -> None:
    config = ListeningConfig(max_utterance_s=1.0)
    found = run([0.9] * 100, config)  # 3.2 s of speech
    cuts = [f for f in found if isinstance(f, Ended)]
    assert [c.reason for c in cuts] == ["max_length"] * 3
    assert all(len(c.pcm) <= config.max_utterance_bytes for c in cuts)
    assert sum(isinstance(f, Started) for f in found) == 4  # the fourth goes on


def test_ten_minutes_of_noise_it_takes_for_speech_keep_memory_bounded() -> None:
    """The worst case: the VAD says "speech" for ten minutes. Cuts come at the cap, and what
    is held never exceeds one capped utterance plus the pre-roll."""
    endpointer = Endpointer(CONFIG)
    window = bytes(WINDOW_BYTES)
    bound = CONFIG.max_utterance_bytes + CONFIG.preroll_ms * 32
    held, cuts = 0, 0
    for index in range(10 * 60 * 1000 // WINDOW_MS):
        cuts += sum(isinstance(f, Ended) for f in endpointer.push(window, 0.5 + index % 2 * 0.4))
        held = max(held, endpointer.buffered_bytes)
    assert held <= bound and cuts == 30  # 600 s / 20 s


@pytest.mark.parametrize("probability", [0.0, 0.2, 0.34])
def test_quiet_input_holds_only_the_preroll(probability: float) -> None:
    endpointer = Endpointer(CONFIG)
    for _ in range(1000):
        assert endpointer.push(bytes(WINDOW_BYTES), probability) == []
    assert endpointer.buffered_bytes == 6 * WINDOW_BYTES  # 192 ms


# --- with a turn model: the adaptive silence rule (scores given, the clock is the windows) ---


class Adaptive:
    """An endpointer with a turn model; ``push`` says what each window brought."""

    def __init__(self, config: ListeningConfig = ONCE) -> None:
        self.endpointer = Endpointer(config, turn_model=True)
        self.index = 0

    def push(
        self, probabilities: list[float]
    ) -> list[tuple[int, Started | Ended | Paused | Resumed]]:
        found = []
        for probability in probabilities:
            window = self.index.to_bytes(4, "big") * (WINDOW_BYTES // 4)
            found += [(self.index, f) for f in self.endpointer.push(window, probability)]
            self.index += 1
        return found

    def paused(self, probabilities: list[float]) -> Paused:
        *_, (_, paused) = self.push(probabilities)
        assert isinstance(paused, Paused)
        return paused


def test_a_complete_turn_ends_at_the_short_pause() -> None:
    adaptive = Adaptive()
    found = adaptive.push([0.01] * 5 + [0.9] * 30 + [0.01] * PAUSE)
    assert [(i, type(f)) for i, f in found] == [
        (6, Started),
        (34 + PAUSE, Paused),
    ]  # onset: 2 windows
    paused = found[1][1]
    assert isinstance(paused, Paused)  # the utterance so far: pre-roll, speech, the pause
    assert windows_of(paused.pcm) == list(range(0, 35 + PAUSE))
    [ended] = adaptive.endpointer.judged(paused.ticket, COMPLETE)
    assert ended.reason == "silence" and ended.at_ms == 35 * WINDOW_MS
    assert ended.ticket == paused.ticket and ended.pcm == paused.pcm
    assert (ended.waited_ms, ended.turn, ended.complete) == (PAUSE * WINDOW_MS, COMPLETE, True)
    assert windows_of(ended.pcm) == list(range(0, 35 + PAUSE))  # the tail: what was waited
    assert adaptive.push([0.01] * 100) == []  # over: the silence after it is nobody's


def test_an_unfinished_turn_waits_for_the_long_silence_then_ends_anyway() -> None:
    adaptive = Adaptive()
    paused = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    assert adaptive.endpointer.judged(paused.ticket, UNFINISHED) == []
    assert adaptive.push([0.01] * (WAIT - PAUSE - 1)) == []  # not a window early
    [(_, ended)] = adaptive.push([0.01])
    assert isinstance(ended, Ended) and ended.reason == "silence"
    assert (ended.waited_ms, ended.turn, ended.complete) == (WAIT * WINDOW_MS, UNFINISHED, False)


def test_speech_that_resumes_after_the_pause_is_no_end_and_the_next_pause_asks_again() -> None:
    adaptive = Adaptive()
    first = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    # the user goes on before the model answers: what was started on that pause is moot
    assert adaptive.push([0.9] * 20) == [(30 + PAUSE, Resumed(first.ticket))]
    assert adaptive.endpointer.judged(first.ticket, COMPLETE) == []  # a stale answer
    second = adaptive.paused([0.01] * PAUSE)  # the next pause asks again
    assert second.ticket != first.ticket
    assert windows_of(second.pcm)[-1] == 30 + PAUSE + 20 + PAUSE - 1
    [ended] = adaptive.endpointer.judged(second.ticket, COMPLETE)
    assert ended.at_ms == (30 + PAUSE + 20) * WINDOW_MS


def test_speech_after_an_unfinished_verdict_starts_the_wait_again() -> None:
    adaptive = Adaptive()
    paused = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    assert adaptive.endpointer.judged(paused.ticket, UNFINISHED) == []
    assert adaptive.push([0.01] * 10 + [0.9] * 5) == [(30 + PAUSE + 10, Resumed(paused.ticket))]
    found = adaptive.push([0.01] * WAIT)
    assert [type(f) for _, f in found] == [Paused, Ended]  # asked again, then the long limit
    ended = found[1][1]
    assert isinstance(ended, Ended) and ended.turn is None  # it was not answered
    assert ended.waited_ms == WAIT * WINDOW_MS  # the wait, not the silence rule's 16 windows
    assert ended.ticket == found[0][1].ticket != paused.ticket  # the second pause's audio


@pytest.mark.parametrize("quiet", [PAUSE - 1, PAUSE])
def test_speech_after_a_pause_says_resumed_only_once_the_pause_was_asked_about(quiet: int) -> None:
    adaptive = Adaptive()
    found = adaptive.push([0.9] * 30 + [0.01] * quiet + [0.9] * 3 + [0.2] * (PAUSE - 1) + [0.9])
    kinds = [type(f) for _, f in found]
    assert kinds == [Started, *([Paused, Resumed] if quiet == PAUSE else [])]
    silence_rule = Endpointer(CONFIG)  # no turn model: no pause is asked about, none resumed
    pushed = [silence_rule.push(bytes(WINDOW_BYTES), p) for p in [0.9] * 30 + [0.01] * 12 + [0.9]]
    assert [type(f) for found in pushed for f in found] == [Started]


def test_an_answer_that_comes_late_ends_the_turn_where_it_comes() -> None:
    adaptive = Adaptive()
    paused = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    adaptive.push([0.01] * 5)  # frames the socket read while the model ran
    [ended] = adaptive.endpointer.judged(paused.ticket, COMPLETE)
    assert ended.waited_ms == (PAUSE + 5) * WINDOW_MS


def test_when_the_model_fails_the_silence_rule_decides() -> None:
    adaptive = Adaptive()
    paused = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    assert adaptive.endpointer.judged(paused.ticket, None) == []
    silence_windows = 500 // WINDOW_MS + 1
    [(_, ended)] = adaptive.push([0.01] * (silence_windows - PAUSE))
    assert isinstance(ended, Ended) and ended.waited_ms == silence_windows * WINDOW_MS
    assert (ended.turn, ended.complete) == (None, None)


SILENCE = 500 // WINDOW_MS + 1  # the silence rule: 16 windows (512 ms)


def test_an_utterance_holding_a_paused_reply_waits_only_the_silence_when_unfinished() -> None:
    """Over a paused reply the words are what it waits for: an unfinished score ends the
    utterance after ``silence_ms``, not ``turn_wait_ms``; only this utterance."""
    adaptive = Adaptive()
    paused = adaptive.paused([0.9] * 10 + [0.01] * PAUSE)
    adaptive.endpointer.over_reply(True)
    assert adaptive.endpointer.judged(paused.ticket, UNFINISHED) == []
    assert adaptive.push([0.01] * (SILENCE - PAUSE - 1)) == []  # not a window early
    [(_, ended)] = adaptive.push([0.01])
    assert isinstance(ended, Ended) and ended.waited_ms == SILENCE * WINDOW_MS
    assert (ended.turn, ended.complete) == (UNFINISHED, False)
    # the next utterance is a turn like any other: the model's wait again
    paused = adaptive.paused([0.9] * 10 + [0.01] * PAUSE)
    assert adaptive.endpointer.judged(paused.ticket, UNFINISHED) == []
    assert adaptive.push([0.01] * (WAIT - PAUSE - 1)) == []
    assert [type(f) for _, f in adaptive.push([0.01])] == [Ended]


def test_over_a_paused_reply_the_silence_ends_the_utterance_before_the_model_answers() -> None:
    """The model slow to answer: the silence ends the utterance anyway, and the late answer is
    ignored."""
    adaptive = Adaptive()
    paused = adaptive.paused([0.9] * 10 + [0.01] * PAUSE)
    adaptive.endpointer.over_reply(True)
    assert adaptive.push([0.01] * (SILENCE - PAUSE - 1)) == []
    [(_, ended)] = adaptive.push([0.01])
    assert isinstance(ended, Ended) and ended.waited_ms == SILENCE * WINDOW_MS
    assert ended.turn is None and ended.ticket == paused.ticket
    assert adaptive.endpointer.judged(paused.ticket, UNFINISHED) == []


def test_a_reply_cut_by_the_utterance_leaves_it_the_model_s_wait() -> None:
    """Past the interrupt bound the reply is cut: the utterance waits as any turn does."""
    adaptive = Adaptive()
    adaptive.endpointer.over_reply(True)
    paused = adaptive.paused([0.9] * 40 + [0.01] * PAUSE)
    adaptive.endpointer.over_reply(False)
    assert adaptive.endpointer.judged(paused.ticket, UNFINISHED) == []
    assert adaptive.push([0.01] * (WAIT - PAUSE - 1)) == []
    [(_, ended)] = adaptive.push([0.01])
    assert isinstance(ended, Ended) and ended.waited_ms == WAIT * WINDOW_MS


def test_a_dropped_utterance_does_not_leave_its_hold_to_the_next() -> None:
    adaptive = Adaptive()
    adaptive.push([0.9] * 10)
    adaptive.endpointer.over_reply(True)
    adaptive.endpointer.reset()
    paused = adaptive.paused([0.9] * 10 + [0.01] * PAUSE)
    assert adaptive.endpointer.judged(paused.ticket, UNFINISHED) == []
    assert adaptive.push([0.01] * (WAIT - PAUSE - 1)) == []


def test_the_threshold_is_a_setting() -> None:
    adaptive = Adaptive(ListeningConfig(turn_threshold=0.95, turn_recheck_ms=0))
    paused = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    assert adaptive.endpointer.judged(paused.ticket, COMPLETE) == []  # 0.91 < 0.95


def test_the_pause_holds_the_whole_utterance_so_far_and_the_end_names_it() -> None:
    """The model reads the last 8 s of it; eager recognition, all of it, which is the
    utterance that ends there (``ticket``) unless speech resumed."""
    adaptive = Adaptive()
    paused = adaptive.paused([0.9] * 400 + [0.01] * PAUSE)  # 12.8 s of speech
    assert windows_of(paused.pcm) == list(range(0, 400 + PAUSE))
    assert adaptive.endpointer.judged(paused.ticket, UNFINISHED) == []
    [(_, ended)] = adaptive.push([0.01] * (WAIT - PAUSE))
    assert isinstance(ended, Ended) and ended.ticket == paused.ticket
    more = (TAIL_MS // WINDOW_MS - PAUSE) * WINDOW_BYTES  # the tail's silence past the pause
    assert ended.pcm.startswith(paused.pcm) and len(ended.pcm) == len(paused.pcm) + more


def test_an_answer_after_the_utterance_ended_or_was_dropped_is_ignored() -> None:
    adaptive = Adaptive()
    paused = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    adaptive.endpointer.reset()  # listen.stop, say
    assert adaptive.endpointer.judged(paused.ticket, COMPLETE) == []
    again = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    assert adaptive.endpointer.judged(paused.ticket, COMPLETE) == []
    assert len(adaptive.endpointer.judged(again.ticket, COMPLETE)) == 1


# --- the second ask: a pause the model called incomplete is asked about once more ---------


def unfinished_at_the_first_ask() -> tuple[Adaptive, Paused]:
    adaptive = Adaptive(CONFIG)
    first = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    assert not first.last  # another ask follows an unfinished answer
    assert adaptive.endpointer.judged(first.ticket, UNFINISHED) == []
    return adaptive, first


def test_an_unfinished_pause_is_asked_again_at_the_recheck_and_not_a_window_early() -> None:
    adaptive, first = unfinished_at_the_first_ask()
    assert adaptive.push([0.01] * (RECHECK - PAUSE - 1)) == []
    [(index, again)] = adaptive.push([0.01])
    assert index == 30 + RECHECK - 1 and isinstance(again, Paused)
    assert again.ticket == first.ticket and again.last  # the same speech; the wait follows
    assert windows_of(again.pcm) == list(range(0, 30 + RECHECK))


def test_the_second_ask_ends_the_turn_only_at_its_stricter_threshold() -> None:
    adaptive, _ = unfinished_at_the_first_ask()
    again = adaptive.paused([0.01] * (RECHECK - PAUSE))
    assert adaptive.endpointer.judged(again.ticket, SURER) == []  # under the second bar
    [(_, ended)] = adaptive.push([0.01] * (WAIT - RECHECK))
    assert isinstance(ended, Ended) and ended.waited_ms == WAIT * WINDOW_MS
    assert (ended.turn, ended.complete) == (SURER, False)
    adaptive, _ = unfinished_at_the_first_ask()
    again = adaptive.paused([0.01] * (RECHECK - PAUSE))
    at_the_bar = TurnScore(CONFIG.turn_recheck_threshold, 30.0)
    [ended] = adaptive.endpointer.judged(again.ticket, at_the_bar)
    assert ended.waited_ms == RECHECK * WINDOW_MS and ended.complete
    assert ended.ticket == again.ticket


def test_a_complete_or_failed_first_answer_asks_nothing_more() -> None:
    adaptive = Adaptive(CONFIG)
    paused = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    [ended] = adaptive.endpointer.judged(paused.ticket, SURER)  # over the first ask's bar
    assert ended.complete and ended.waited_ms == PAUSE * WINDOW_MS
    adaptive = Adaptive(CONFIG)
    paused = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    assert adaptive.endpointer.judged(paused.ticket, None) == []
    silence_windows = 500 // WINDOW_MS + 1  # the silence rule, and no second ask before it
    found = adaptive.push([0.01] * (silence_windows - PAUSE))
    assert [type(f) for _, f in found] == [Ended]


def test_speech_before_the_recheck_says_resumed_and_the_next_pause_asks_from_the_start() -> None:
    adaptive, first = unfinished_at_the_first_ask()
    assert adaptive.push([0.01] + [0.9] * 10) == [(30 + PAUSE + 1, Resumed(first.ticket))]
    second = adaptive.paused([0.01] * PAUSE)
    assert second.ticket != first.ticket and not second.last
    [ended] = adaptive.endpointer.judged(second.ticket, SURER)  # the first ask's threshold
    assert ended.complete


@pytest.mark.parametrize("recheck_ms", [0, 96, 1000, 2000])
def test_a_recheck_not_between_the_pause_and_the_wait_asks_once(recheck_ms: int) -> None:
    adaptive = Adaptive(ListeningConfig(turn_recheck_ms=recheck_ms))
    paused = adaptive.paused([0.9] * 30 + [0.01] * PAUSE)
    assert paused.last
    assert adaptive.endpointer.judged(paused.ticket, UNFINISHED) == []
    found = adaptive.push([0.01] * (WAIT - PAUSE))
    assert [type(f) for _, f in found] == [Ended]


def test_each_pause_after_speech_resumed_has_a_ticket_of_its_own() -> None:
    adaptive = Adaptive()
    tickets = [adaptive.paused([0.9] * 10 + [0.01] * PAUSE).ticket for _ in range(3)]
    assert len(set(tickets)) == 3 and all(isinstance(t, int) for t in tickets)


def test_the_silence_rule_alone_never_asks() -> None:
    found = run([0.9] * 30 + [0.01] * 10 + [0.9] * 30 + [0.01] * 20)
    assert not any(isinstance(f, Paused) for f in found)
    assert isinstance(found[-1], Ended) and found[-1].ticket is None
