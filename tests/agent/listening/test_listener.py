"""One socket's listening, without a socket: pacing, push-to-talk, barge-in, bounded memory."""

from __future__ import annotations

import pytest

from agent.config import ListeningConfig
from agent.events import ErrorEvent, Listening, Refused, SpeechEnd, SpeechStart
from agent.listening.endpointer import Paused, Resumed
from agent.listening.listener import (
    BargeIn,
    Hold,
    Listener,
    ListeningService,
    Utterance,
    listening_service,
)
from agent.listening.recognizer import Recognition
from agent.listening.turn_model import SmartTurn, TurnScore, shared_smart_turn
from agent.listening.whisper import shared_whisper
from agent.requests import BadRequest
from tests.agent.listening.speech import silence, spoken
from tts_server.engines import Engine

CONFIG = ListeningConfig()
UNPACED = ListeningConfig(burst_s=1e6)  # the clock stands still in these tests


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_audio_ahead_of_real_time_by_more_than_the_burst_is_dropped_and_said_once() -> None:
    clock = Clock()
    listener = Listener(CONFIG, "push_to_talk", clock)
    frame = silence(100)
    said = [listener.feed(frame, False) for _ in range(25)]  # 2.5 s at once: 2 s may run ahead
    assert said[:20] == [[]] * 20
    [[too_fast]] = said[20:21]
    assert isinstance(too_fast, Refused) and (too_fast.code, too_fast.in_reply_to) == (
        "audio_too_fast",
        "audio",
    )
    assert said[21:] == [[]] * 4  # said once per run of dropped frames
    clock.now += 0.5  # real time caught up a little: frames are taken again
    assert [listener.feed(frame, False) for _ in range(5)] == [[]] * 5
    assert listener.feed(frame, False)[0].code == "audio_too_fast"  # type: ignore[union-attr]


def test_push_to_talk_keeps_the_preroll_and_ends_at_talk_end() -> None:
    listener = Listener(CONFIG, "push_to_talk", Clock())
    for _ in range(10):
        assert listener.feed(silence(100), False) == []
    assert listener.buffered_bytes == 192 * 32  # only the pre-roll before the press
    assert listener.talk_start(agent_speaking=False) == [SpeechStart(1000.0)]
    listener.feed(silence(100), False)
    ended, utterance = listener.talk_end()
    assert ended == SpeechEnd(1100.0, 292.0, "talk.end")  # 192 ms pre-roll + 100 ms pressed
    assert isinstance(utterance, Utterance) and utterance.audio_ms == 292.0
    assert listener.buffered_bytes == 0


def test_talk_start_over_a_running_turn_barges_in_at_once() -> None:
    listener = Listener(CONFIG, "push_to_talk", Clock())
    assert listener.talk_start(agent_speaking=True) == [SpeechStart(0.0), BargeIn()]
    with pytest.raises(BadRequest, match="twice"):
        listener.talk_start(agent_speaking=True)


def test_a_press_under_100_ms_is_too_short_to_recognize() -> None:
    listener = Listener(CONFIG, "push_to_talk", Clock())
    listener.talk_start(False)
    listener.feed(silence(64), False)
    assert listener.talk_end() == [SpeechEnd(64.0, 64.0, "too_short")]


@pytest.mark.parametrize(
    ("press_ms", "reason"), [(20, "too_short"), (96, "too_short"), (100, "talk.end")]
)
def test_a_press_is_too_short_by_its_own_length_not_its_preroll(press_ms: int, reason: str) -> None:
    listener = Listener(CONFIG, "push_to_talk", Clock())
    listener.feed(silence(500), False)  # before the press: 192 ms of it is the pre-roll
    listener.talk_start(False)
    listener.feed(silence(press_ms), False)
    ended, *utterance = listener.talk_end()
    assert ended == SpeechEnd(500.0 + press_ms, 192.0 + press_ms, reason)
    assert len(utterance) == (reason == "talk.end")


def test_ten_minutes_held_down_are_cut_at_the_cap_and_memory_stays_bounded() -> None:
    config = UNPACED
    listener = Listener(config, "push_to_talk", Clock())
    listener.talk_start(False)
    heard, held = [], 0
    for _ in range(10 * 60 * 10):  # 100 ms frames
        heard += listener.feed(silence(100), False)
        held = max(held, listener.buffered_bytes)
    assert held <= config.max_utterance_bytes
    assert [type(h).__name__ for h in heard] == ["ErrorEvent", "SpeechEnd", "Utterance"]
    assert listener.talk_end() == []  # the press was cut already


@pytest.fixture(scope="module")
def request_pcm(engine: Engine) -> bytes:
    return spoken(engine, "What is the capital of France?")


def test_hands_free_speech_over_a_running_turn_holds_it_then_cuts_it_at_the_bounds(
    request_pcm: bytes,
) -> None:
    """At ``barge_in_ms`` the reply is held (paused while the words are heard); speech that
    lasts ``interrupt_ms`` cuts it without waiting for them."""
    listener = Listener(UNPACED, "hands_free", Clock())
    heard = []
    stream = silence(300) + request_pcm + silence(700)
    for start in range(0, len(stream), 640):
        heard += [(start, h) for h in listener.feed(stream[start : start + 640], True)]
    kinds = [type(h).__name__ for _, h in heard]
    assert kinds == ["SpeechStart", "Hold", "BargeIn", "SpeechEnd", "Utterance"]
    (_, start), (held_at, _), (barged_at, _) = heard[:3]
    assert isinstance(start, SpeechStart)
    held_ms = held_at / 32 + 20  # the end of the frame that brought the hold
    assert start.at_ms + 200 <= held_ms <= start.at_ms + 200 + 32 + 20
    barged_ms = barged_at / 32 + 20
    assert start.at_ms + 1000 <= barged_ms <= start.at_ms + 1000 + 32 + 20


def test_speech_over_the_reply_under_the_interrupt_bound_only_holds_it(
    request_pcm: bytes,
) -> None:
    listener = Listener(UNPACED, "hands_free", Clock())
    stream = silence(300) + request_pcm[:12800] + silence(1500)  # 400 ms said: a backchannel's
    heard = [
        h for i in range(0, len(stream), 640) for h in listener.feed(stream[i : i + 640], True)
    ]
    assert [type(h).__name__ for h in heard] == ["SpeechStart", "Hold", "SpeechEnd", "Utterance"]


def test_hands_free_speech_under_the_threshold_over_a_running_turn_is_not_heard(
    request_pcm: bytes,
) -> None:
    listener = Listener(UNPACED, "hands_free", Clock())
    heard = []
    stream = silence(300) + request_pcm[16000:22400] + silence(700)  # 160 ms voiced
    for start in range(0, len(stream), 640):
        heard += listener.feed(stream[start : start + 640], True)
    assert [type(h).__name__ for h in heard] == ["SpeechStart", "SpeechEnd"]
    assert isinstance(heard[1], SpeechEnd) and heard[1].reason == "too_short"


def test_each_utterance_over_a_running_turn_is_judged_on_its_own(request_pcm: bytes) -> None:
    """One listener, several utterances while the agent speaks: after a barge-in, a cough over
    the next turn is still too short (not a prompt that cuts it), and speech barges in again."""
    listener = Listener(UNPACED, "hands_free", Clock())
    cough = request_pcm[16000:22400]  # 160 ms voiced: under the 200 ms threshold
    stream = silence(300) + request_pcm + silence(700)
    stream += cough + silence(700) + request_pcm + silence(700)
    heard = []
    for start in range(0, len(stream), 640):
        heard += listener.feed(stream[start : start + 640], True)
    speech = ["SpeechStart", "Hold", "BargeIn", "SpeechEnd", "Utterance"]
    assert [type(h).__name__ for h in heard] == [*speech, "SpeechStart", "SpeechEnd", *speech]
    reasons = [h.reason for h in heard if isinstance(h, SpeechEnd)]
    assert reasons == ["silence", "too_short", "silence"]


def test_stop_ends_an_utterance_in_progress_and_drops_it(request_pcm: bytes) -> None:
    listener = Listener(UNPACED, "hands_free", Clock())
    for start in range(0, 32000, 640):
        listener.feed((silence(300) + request_pcm)[start : start + 640], False)
    [ended] = listener.stop()
    assert isinstance(ended, SpeechEnd) and ended.reason == "listen.stop"
    assert listener.buffered_bytes == 0


def test_hands_free_with_the_turn_model_asks_at_the_pause_and_its_answer_ends_the_turn(
    request_pcm: bytes,
) -> None:
    listener = Listener(UNPACED, "hands_free", Clock(), turn_model=True)
    stream = silence(300) + request_pcm + silence(1500)
    heard = []
    for start in range(0, len(stream), 640):
        heard += listener.feed(stream[start : start + 640], False)
        if any(isinstance(h, Paused) for h in heard):
            break  # the socket reads no further until the model answers
    start, paused = heard
    assert isinstance(start, SpeechStart) and isinstance(paused, Paused)
    model = SmartTurn()
    model.load()
    turn = TurnScore(model.score(paused.pcm), 40.0)
    end, utterance = listener.judged(paused.ticket, turn, False)
    assert isinstance(end, SpeechEnd) and isinstance(utterance, Utterance)
    assert (end.reason, end.turn, end.turn_score, end.turn_ms) == (
        "silence",
        "complete",
        turn.score,
        40.0,
    )
    assert end.wait_ms == CONFIG.pause_ms  # 5 windows: the pause, not the 500 ms rule
    assert utterance.pcm == paused.pcm  # all of it: pre-roll, the question, the pause
    assert listener.judged(paused.ticket, turn, False) == []  # answered once


def test_a_turn_model_answer_after_a_new_utterance_started_is_ignored(request_pcm: bytes) -> None:
    listener = Listener(UNPACED, "hands_free", Clock(), turn_model=True)
    stream = silence(300) + request_pcm + silence(300) + request_pcm
    heard = []
    for start in range(0, len(stream), 640):
        heard += listener.feed(stream[start : start + 640], False)
    paused = next(h for h in heard if isinstance(h, Paused))
    assert listener.judged(paused.ticket, TurnScore(0.99, 40.0), False) == []  # the user went on


def test_speech_under_the_barge_in_threshold_while_the_agent_speaks_asks_no_model(
    request_pcm: bytes,
) -> None:
    """A cough over the reply ends by the silence rule, as ever, and spends no CPU beside the
    reply's synthesis on a turn model or an eager recognition."""
    listener = Listener(UNPACED, "hands_free", Clock(), turn_model=True)
    heard = []
    stream = silence(300) + request_pcm[16000:22400] + silence(700)  # 160 ms voiced
    for start in range(0, len(stream), 640):
        heard += listener.feed(stream[start : start + 640], True)
    assert [type(h).__name__ for h in heard] == ["SpeechStart", "SpeechEnd"]
    end = heard[1]
    assert isinstance(end, SpeechEnd) and (end.reason, end.turn) == ("too_short", None)
    assert end.wait_ms == 512  # the silence rule's 16 windows


@pytest.mark.parametrize(
    ("press", "message"),
    [
        (lambda listener: listener.talk_start(False), "'talk.start' is for push_to_talk"),
        (lambda listener: listener.talk_end(), "'talk.end' is for push_to_talk"),
    ],
)
def test_a_press_while_hands_free_is_refused_as_not_push_to_talk(press, message: str) -> None:  # type: ignore[no-untyped-def]
    listener = Listener(CONFIG, "hands_free", Clock())
    with pytest.raises(BadRequest) as refused:
        press(listener)
    assert refused.value.code == "not_push_to_talk"
    assert refused.value.message == f"{message}; listening is hands_free"


def test_presses_out_of_order_are_refused_with_their_codes() -> None:
    listener = Listener(CONFIG, "push_to_talk", Clock())
    with pytest.raises(BadRequest) as refused:
        listener.talk_end()
    assert (refused.value.code, refused.value.message) == (
        "not_talking",
        "'talk.end' came without 'talk.start'",
    )
    listener.talk_start(False)
    with pytest.raises(BadRequest) as refused:
        listener.talk_start(False)
    assert (refused.value.code, refused.value.message) == (
        "already_talking",
        "'talk.start' came twice without 'talk.end'",
    )


def test_press_after_press_each_is_its_own_utterance() -> None:
    listener = Listener(UNPACED, "push_to_talk", Clock())
    for press_ms in (200, 300):
        listener.talk_start(False)
        listener.feed(silence(press_ms), False)
        ended, utterance = listener.talk_end()
        assert isinstance(ended, SpeechEnd) and ended.reason == "talk.end"
        assert isinstance(utterance, Utterance)
    assert listener.buffered_bytes == 0


def test_less_audio_than_the_preroll_before_a_press_is_all_kept() -> None:
    listener = Listener(CONFIG, "push_to_talk", Clock())
    listener.feed(silence(100), False)
    assert listener.buffered_bytes == len(silence(100))  # under the 192 ms pre-roll: all of it


def test_a_press_cut_at_the_cap_holds_nothing_after_and_the_next_press_works() -> None:
    config = ListeningConfig(burst_s=1e6, max_utterance_s=0.5)
    listener = Listener(config, "push_to_talk", Clock())
    listener.talk_start(False)
    assert listener.feed(silence(400), False) == []
    cut = listener.feed(silence(100), False)  # exactly the cap: 500 ms
    assert [type(o) for o in cut] == [ErrorEvent, SpeechEnd, Utterance]
    assert cut[1].reason == "max_length"  # type: ignore[union-attr]
    assert listener.feed(silence(300), False) == [] and listener.buffered_bytes == 0
    assert listener.talk_end() == []  # the press was cut already: nothing more to say
    assert listener.talk_start(False) == [SpeechStart(800.0)]  # a new press is taken


def fed(listener: Listener, stream: bytes, agent_speaking: bool = False) -> list[object]:
    """``stream`` in 20 ms frames; all the listener said."""
    heard: list[object] = []
    for start in range(0, len(stream), 640):
        heard += listener.feed(stream[start : start + 640], agent_speaking)
    return heard


def test_speech_end_says_where_the_speech_ended_how_long_it_was_and_the_silence_waited(
    request_pcm: bytes,
) -> None:
    listener = Listener(UNPACED, "hands_free", Clock())
    start, end, utterance = fed(listener, silence(300) + request_pcm + silence(700))
    assert isinstance(start, SpeechStart) and isinstance(end, SpeechEnd)
    assert isinstance(utterance, Utterance)
    speech_ms = len(request_pcm) / 32
    assert 300 + speech_ms - 200 <= end.at_ms <= 300 + speech_ms + 64  # Silero's fall
    assert end.audio_ms == utterance.audio_ms > end.at_ms - start.at_ms  # pre-roll and tail
    assert (end.reason, end.wait_ms, end.turn, end.turn_score, end.turn_ms) == (
        "silence",
        512,
        None,
        None,
        None,
    )


def test_an_utterance_at_the_cap_is_cut_with_its_error_and_no_silence_waited(
    request_pcm: bytes,
) -> None:
    listener = Listener(ListeningConfig(burst_s=1e6, max_utterance_s=1.0), "hands_free", Clock())
    heard = fed(listener, silence(300) + request_pcm + silence(700))
    assert heard[1] == ErrorEvent("utterance_too_long", "an utterance is at most 1.0 s; cut there")
    end, utterance = heard[2:4]
    assert isinstance(end, SpeechEnd) and isinstance(utterance, Utterance)
    assert (end.reason, end.wait_ms) == ("max_length", None)
    assert end.audio_ms == utterance.audio_ms == 992  # 31 whole windows, pre-roll included


def test_a_turn_the_model_left_unfinished_ends_after_the_wait_as_incomplete(
    request_pcm: bytes,
) -> None:
    once = ListeningConfig(burst_s=1e6, turn_recheck_ms=0)
    listener = Listener(once, "hands_free", Clock(), turn_model=True)
    heard = fed(listener, silence(300) + request_pcm + silence(CONFIG.pause_ms + 64))
    paused = next(h for h in heard if isinstance(h, Paused))
    unsure = TurnScore(0.05, 40.0)
    assert listener.judged(paused.ticket, unsure, False) == []
    end, utterance = fed(listener, silence(1200))[:2]
    assert isinstance(end, SpeechEnd) and isinstance(utterance, Utterance)
    assert (end.turn, end.turn_score, end.turn_ms, end.wait_ms) == ("incomplete", 0.05, 40.0, 1024)
    assert utterance.ticket == paused.ticket  # its eager recognition may stand for it


def test_a_short_utterance_holding_the_reply_ends_after_the_silence_though_unfinished(
    request_pcm: bytes,
) -> None:
    """A lone "right" over the reply: the model calls it unfinished, but the paused reply waits
    for its words, so it ends after ``silence_ms`` (512), not the model's wait (1024)."""
    once = ListeningConfig(burst_s=1e6, turn_recheck_ms=0)
    listener = Listener(once, "hands_free", Clock(), turn_model=True)
    heard = fed(listener, silence(300) + request_pcm[:12800] + silence(CONFIG.pause_ms + 64), True)
    assert Hold() in heard
    paused = next(h for h in heard if isinstance(h, Paused))
    assert listener.judged(paused.ticket, TurnScore(0.05, 40.0), True) == []
    end, utterance = fed(listener, silence(600), True)[:2]
    assert isinstance(end, SpeechEnd) and isinstance(utterance, Utterance)
    assert (end.turn, end.wait_ms) == ("incomplete", 512)


def test_an_utterance_that_cut_the_reply_waits_for_the_end_of_its_turn(
    request_pcm: bytes,
) -> None:
    """Past the interrupt bound the reply is cut and the words are the user's turn: an
    unfinished score waits the model's whole wait, as for any turn."""
    once = ListeningConfig(burst_s=1e6, turn_recheck_ms=0)
    listener = Listener(once, "hands_free", Clock(), turn_model=True)
    heard = fed(listener, silence(300) + request_pcm + silence(CONFIG.pause_ms + 64), True)
    assert BargeIn() in heard
    paused = next(h for h in heard if isinstance(h, Paused))
    assert listener.judged(paused.ticket, TurnScore(0.05, 40.0), True) == []
    end, utterance = fed(listener, silence(1200), True)[:2]
    assert isinstance(end, SpeechEnd) and isinstance(utterance, Utterance)
    assert (end.turn, end.wait_ms) == ("incomplete", 1024)


def test_stop_during_a_press_ends_it_there_and_a_later_talk_end_is_refused() -> None:
    listener = Listener(UNPACED, "push_to_talk", Clock())
    listener.talk_start(False)
    listener.feed(silence(300), False)
    assert listener.stop() == [SpeechEnd(300.0, 0.0, "listen.stop")]
    assert listener.buffered_bytes == 0 and listener.stop() == []
    with pytest.raises(BadRequest) as refused:
        listener.talk_end()
    assert refused.value.code == "not_talking"


def test_stop_after_a_press_was_cut_at_the_cap_says_nothing_more() -> None:
    listener = Listener(ListeningConfig(burst_s=1e6, max_utterance_s=0.5), "push_to_talk", Clock())
    listener.talk_start(False)
    assert [type(o) for o in listener.feed(silence(500), False)] == [
        ErrorEvent,
        SpeechEnd,
        Utterance,
    ]
    assert listener.stop() == []  # its end was said at the cap


def test_stop_hands_free_says_where_the_audio_stood(request_pcm: bytes) -> None:
    listener = Listener(UNPACED, "hands_free", Clock())
    fed(listener, (silence(300) + request_pcm)[:32000])  # 1 s in, mid-speech
    assert listener.stop() == [SpeechEnd(1000.0, 0.0, "listen.stop")]
    assert listener.stop() == []  # nothing in progress now


def test_a_first_frame_already_too_fast_is_refused_and_said() -> None:
    listener = Listener(ListeningConfig(burst_s=0.01), "push_to_talk", Clock())
    assert listener.feed(silence(20), False) == [
        Refused("audio_too_fast", "audio came over 0.01 s ahead of real time; dropped", "audio")
    ]


def test_one_frame_that_holds_a_whole_utterance_says_all_of_it_in_order(
    request_pcm: bytes,
) -> None:
    stream = silence(300) + request_pcm + silence(700)
    heard = Listener(UNPACED, "hands_free", Clock()).feed(stream, False)
    assert [type(h) for h in heard] == [SpeechStart, SpeechEnd, Utterance]
    asking = Listener(UNPACED, "hands_free", Clock(), turn_model=True)
    assert [type(h) for h in asking.feed(stream, False)] == [SpeechStart, Paused]


def test_speech_after_a_pause_the_model_was_asked_about_says_resumed(request_pcm: bytes) -> None:
    listener = Listener(
        ListeningConfig(burst_s=1e6, turn_recheck_ms=0), "hands_free", Clock(), True
    )
    heard = fed(listener, silence(300) + request_pcm + silence(CONFIG.pause_ms + 64))
    paused = next(h for h in heard if isinstance(h, Paused))
    assert listener.judged(paused.ticket, TurnScore(0.05, 40.0), False) == []
    assert Resumed(paused.ticket) in fed(listener, request_pcm[:16000])


def test_a_cough_over_the_reply_is_too_short_even_when_its_silence_rule_ends_it_at_the_pause(
    request_pcm: bytes,
) -> None:
    """The model is not asked over the reply: the silence rule (here shorter than the pause)
    decides, and the cough, under the barge-in threshold, is still nobody's prompt."""
    config = ListeningConfig(burst_s=1e6, silence_ms=64)
    listener = Listener(config, "hands_free", Clock(), turn_model=True)
    heard = fed(listener, silence(300) + request_pcm[16000:22400] + silence(700), True)
    assert [type(h) for h in heard] == [SpeechStart, SpeechEnd]
    assert heard[1].reason == "too_short"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("barge_in_ms", "windows"), [(192, 4), (200, 5), (224, 5)])
def test_a_hold_comes_in_the_window_whose_speech_reaches_the_threshold(
    request_pcm: bytes, barge_in_ms: int, windows: int
) -> None:
    """Speech is counted in 32 ms windows: 192 ms is reached in the sixth (the onset's two and
    four more), 200 and 224 ms in the seventh."""
    config = ListeningConfig(burst_s=1e6, barge_in_ms=barge_in_ms)
    listener = Listener(config, "hands_free", Clock())
    stream = silence(300) + request_pcm
    said = [listener.feed(stream[i : i + 1024], True) for i in range(0, 40 * 1024, 1024)]
    started = next(i for i, out in enumerate(said) if SpeechStart in map(type, out))
    held = next(i for i, out in enumerate(said) if Hold() in out)
    assert held - started == windows


def test_an_interrupt_bound_at_most_the_barge_in_cuts_at_once(request_pcm: bytes) -> None:
    """``interrupt_ms`` no longer than ``barge_in_ms``: the hold and the cut come together (the
    old rule: every barge-in cuts)."""
    config = ListeningConfig(burst_s=1e6, interrupt_ms=100)
    listener = Listener(config, "hands_free", Clock())
    stream = silence(300) + request_pcm
    said = [listener.feed(stream[i : i + 1024], True) for i in range(0, 40 * 1024, 1024)]
    assert [out for out in said if Hold() in out] == [[Hold(), BargeIn()]]


class Hears:
    """A recognizer that is never asked (the service only holds it)."""

    queue_depth = 0

    async def load(self) -> None: ...

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        raise AssertionError("not asked")


@pytest.mark.parametrize("mode", ["hands_free", "push_to_talk", None])
def test_the_listening_answer_says_the_mode_the_format_and_the_bounds(mode: str | None) -> None:
    config = ListeningConfig(silence_ms=700, barge_in_ms=300, max_utterance_s=12.5)
    assert ListeningService(config, Hears()).state(mode) == Listening(  # type: ignore[arg-type]
        mode, 16000, "s16le", 700, 300, 12500, config.max_frame_bytes
    )
    assert config.max_frame_bytes == 3200  # 100 ms of 16 kHz s16le


def test_a_front_door_listens_with_the_shared_models_its_settings_name() -> None:
    silence_rule = ListeningConfig(endpointing="silence")
    mine = Hears()
    service = listening_service(silence_rule, mine)  # type: ignore[arg-type]
    assert (service.config, service.recognizer, service.turn_judge) == (silence_rule, mine, None)
    turn_model = ListeningConfig()
    shared = listening_service(turn_model)
    assert shared.recognizer is shared_whisper(turn_model)
    assert shared.turn_judge is shared_smart_turn() is not None
