"""``VoiceInput`` without a socket: messages and frames in, typed actions out, in order.

Push-to-talk needs no VAD, so these run in microseconds with a recognizer that is never
called; the hands-free path through the real VAD is ``test_voice_socket.py``'s.
"""

from __future__ import annotations

import pytest

from agent.config import ListeningConfig
from agent.events import (
    Listening,
    ReplyPaused,
    ReplyResumed,
    SpeechEnd,
    SpeechStart,
    TurnCancelled,
)
from agent.leg.messages import MicFrame
from agent.leg.voice_input import (
    CancelTurn,
    PauseReply,
    Recognize,
    Send,
    StartTurn,
    VoiceInput,
    check_frame,
)
from agent.listening.listener import ListeningService
from agent.listening.recognizer import Recognition
from agent.requests import BadRequest
from tests.agent.leg.voice_fakes import LoudIsSpeech
from tests.agent.listening.speech import silence

CONFIG = ListeningConfig(burst_s=1e6)  # frames faster than real time: no pacing here
TTS_SECOND = 24_000 * 2  # bytes of TTS audio a second


class NeverCalled:
    queue_depth = 0

    async def load(self) -> None:
        raise AssertionError("VoiceInput does no I/O")

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        raise AssertionError("VoiceInput does no I/O")


def voice_input() -> VoiceInput:
    return VoiceInput(ListeningService(CONFIG, NeverCalled()))


def push_to_talk() -> VoiceInput:
    given = voice_input()
    [sent] = given.listen("push_to_talk", 0.0)
    assert isinstance(sent, Send) and isinstance(sent.event, Listening)
    assert sent.event.mode == "push_to_talk"
    return given


def frames(given: VoiceInput, count: int, now: float = 0.0, running: bool = False) -> list:
    return [a for _ in range(count) for a in given.frame(MicFrame(silence(32)), now, running)]


@pytest.mark.parametrize(
    ("pcm", "code"),
    [
        (b"", "invalid_audio_frame"),
        (b"\x00" * 5, "invalid_audio_frame"),
        (silence(102), "audio_frame_too_large"),
    ],
)
def test_a_bad_frame_is_a_typed_refusal(pcm: bytes, code: str) -> None:
    with pytest.raises(BadRequest) as refused:
        check_frame(MicFrame(pcm), CONFIG)
    assert refused.value.code == code
    assert check_frame(MicFrame(silence(100)), CONFIG) == silence(100)  # 100 ms is the most


def test_without_listening_every_listening_message_is_refused_but_audio_is_not_listening() -> None:
    given = VoiceInput(None)
    for call in (
        lambda: given.listen("hands_free", 0.0),
        lambda: given.listen_stop(0.0),
        lambda: given.talk_start(0.0, False),
        given.talk_end,
    ):
        with pytest.raises(BadRequest) as refused:
            call()
        assert refused.value.code == "listening_unavailable"
    with pytest.raises(BadRequest) as refused:
        given.frame(MicFrame(silence(32)), 0.0, False)
    assert refused.value.code == "not_listening"


def test_audio_and_talk_before_listen_are_not_listening() -> None:
    given = voice_input()
    with pytest.raises(BadRequest) as refused:
        given.talk_start(0.0, False)
    assert refused.value.code == "not_listening"
    assert refused.value.message == "talk.start before 'listen'; send 'listen' first"


def test_a_press_is_an_utterance_to_recognize_after_its_speech_events() -> None:
    given = push_to_talk()
    assert frames(given, 4) == []  # pre-roll, nothing said
    [start] = given.talk_start(1.0, False)
    assert isinstance(start, Send) and isinstance(start.event, SpeechStart)
    assert frames(given, 10) == []
    end, recognize = given.talk_end()
    assert isinstance(end, Send) and isinstance(end.event, SpeechEnd)
    assert end.event.reason == "talk.end"
    assert isinstance(recognize, Recognize) and len(recognize.utterance.pcm) > 0


def test_a_press_over_a_running_turn_cancels_it() -> None:
    given = push_to_talk()
    start, cancel = given.talk_start(1.0, True)
    assert isinstance(start, Send) and cancel == CancelTurn(None)


def test_a_press_while_an_ended_turn_still_plays_stops_that_playback_by_name() -> None:
    given = push_to_talk()
    given.turn_started("t0")
    given.audio_sent(10.0, 3 * TTS_SECOND, "t1")  # 3 s of audio, sent at once
    start, cancelled = given.talk_start(11.0, False)  # the turn has ended; its audio plays on
    assert isinstance(start, Send) and cancelled == Send(TurnCancelled("t1"))
    assert not given.playback.playing(11.0)  # stopped: a second press cuts nothing
    assert given.talk_end()[0] == Send(SpeechEnd(0.0, 0.0, "too_short"))
    assert len(given.talk_start(12.0, False)) == 1


def test_a_press_after_the_audio_played_out_cuts_nothing() -> None:
    given = push_to_talk()
    given.audio_sent(10.0, TTS_SECOND, "t1")
    assert len(given.talk_start(11.5, False)) == 1  # played out at 11.0


def test_a_running_turn_is_cancelled_naming_what_still_plays() -> None:
    given = push_to_talk()
    given.audio_sent(10.0, 3 * TTS_SECOND, "t1")
    assert given.talk_start(10.5, True)[1] == CancelTurn("t1")


def test_a_new_turn_and_a_stop_forget_what_was_playing() -> None:
    given = push_to_talk()
    given.audio_sent(10.0, 3 * TTS_SECOND, "t1")
    given.turn_started("t0")
    assert not given.playback.playing(10.5)
    given.audio_sent(10.0, 3 * TTS_SECOND, "t2")
    given.turn_stopped()
    assert len(given.talk_start(10.5, False)) == 1


def test_listen_again_drops_the_press_in_progress_and_says_so() -> None:
    given = push_to_talk()
    given.talk_start(0.0, False)
    frames(given, 3)
    ended, state = given.listen("push_to_talk", 0.0)
    assert isinstance(ended, Send) and isinstance(ended.event, SpeechEnd)
    assert (ended.event.audio_ms, ended.event.reason) == (0.0, "listen.stop")
    assert isinstance(state, Send) and isinstance(state.event, Listening)
    stopped = given.listen_stop(0.0)
    assert [type(a.event) for a in stopped if isinstance(a, Send)] == [Listening]
    assert stopped[-1] == Send(ListeningService(CONFIG, NeverCalled()).state(None))


# --- the exact refusals ---------------------------------------------------------------------


def test_each_refusal_says_what_was_wrong_in_words() -> None:
    with pytest.raises(BadRequest) as odd:
        check_frame(MicFrame(b"\x00" * 5), CONFIG)
    assert odd.value.message == "an audio frame is whole s16le samples, not 5 bytes"
    with pytest.raises(BadRequest) as large:
        check_frame(MicFrame(silence(102)), CONFIG)
    assert large.value.message == "an audio frame is at most 100 ms (3200 bytes)"
    with pytest.raises(BadRequest) as deaf:
        VoiceInput(None).listen_stop(0.0)
    assert deaf.value.message == "this server does not listen"
    given = voice_input()
    for call, what in (
        (given.talk_end, "talk.end"),
        (lambda: given.frame(MicFrame(silence(32)), 0.0, False), "audio"),
    ):
        with pytest.raises(BadRequest) as early:
            call()
        assert early.value.message == f"{what} before 'listen'; send 'listen' first"


def test_a_listener_that_cannot_be_made_is_listening_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_vad(*_: object, **__: object) -> None:
        raise ImportError("onnxruntime is missing")

    monkeypatch.setattr("agent.leg.voice_input.Listener", no_vad)
    with pytest.raises(BadRequest) as refused:
        voice_input().listen("hands_free", 0.0)
    assert (refused.value.code, refused.value.message) == (
        "listening_unavailable",
        "no VAD here: onnxruntime is missing",
    )


def test_a_press_over_a_running_turn_whose_audio_played_out_names_no_playback() -> None:
    given = push_to_talk()
    given.audio_sent(10.0, TTS_SECOND, "t1")  # played out at 11.0; the turn still runs
    assert given.talk_start(11.5, True)[1] == CancelTurn(None)


# --- hands-free, with a VAD that hears any sound as speech ---------------------------------


@pytest.fixture
def hands_free(monkeypatch: pytest.MonkeyPatch) -> VoiceInput:
    monkeypatch.setattr("agent.listening.listener.VoiceActivity", LoudIsSpeech)
    given = voice_input()
    given.listen("hands_free", 0.0)
    return given


def speak(given: VoiceInput, ms: int, now: float, running: bool, loud: bool = True) -> list:
    frame = MicFrame((b"\x10\x10" if loud else b"\x00\x00") * (16 * 32))  # 32 ms
    return [a for _ in range(ms // 32) for a in given.frame(frame, now, running)]


def test_speech_over_a_running_turn_pauses_it_once_at_the_barge_in_threshold(
    hands_free: VoiceInput,
) -> None:
    hands_free.turn_started("t1")
    actions = speak(hands_free, 640, 10.0, True)  # under the 1000 ms interrupt bound
    paused = [a for a in actions if isinstance(a, PauseReply)]
    assert paused == [PauseReply(ReplyPaused("t1"), 11.5)]  # resumed at the bound if no words
    assert not any(isinstance(a, CancelTurn) for a in actions)
    assert hands_free.hold.holding
    ended = speak(hands_free, 800, 10.0, True, loud=False)
    assert isinstance(ended[-1], Recognize)  # its words decide


def test_only_an_utterance_over_a_paused_reply_is_recognized_as_one_that_may_murmur(
    hands_free: VoiceInput,
) -> None:
    """Over the paused reply, a murmur Whisper is unsure of may be read as one ("Mm-hmm.":
    ``Recognizer.recognize``), and resumes it; "Stop." still cuts it."""
    hands_free.turn_started("t1")
    hands_free.audio_sent(10.0, 3 * TTS_SECOND, "t1")
    speak(hands_free, 640, 10.0, True)
    [over] = [a for a in speak(hands_free, 800, 10.7, True, loud=False) if isinstance(a, Recognize)]
    assert over.murmurs
    assert hands_free.heard("Mm-hmm.", 11.5, True) == [Send(ReplyResumed("t1"))]
    speak(hands_free, 640, 12.0, True)
    [again] = [
        a for a in speak(hands_free, 800, 12.7, True, loud=False) if isinstance(a, Recognize)
    ]
    assert again.murmurs
    assert hands_free.heard("Stop.", 13.5, True) == [CancelTurn("t1"), StartTurn("Stop.")]
    hands_free.turn_stopped()  # the socket's, once the turn is cut
    speak(hands_free, 640, 14.0, False)  # nothing plays: no pause
    [alone] = [
        a for a in speak(hands_free, 800, 14.7, False, loud=False) if isinstance(a, Recognize)
    ]
    assert not alone.murmurs


def test_words_that_are_not_a_backchannel_cut_the_paused_reply_and_are_the_next_prompt(
    hands_free: VoiceInput,
) -> None:
    hands_free.turn_started("t1")
    hands_free.audio_sent(10.0, 3 * TTS_SECOND, "t1")
    speak(hands_free, 640, 10.0, True)
    assert hands_free.heard("Okay, stop.", 10.6, True) == [
        CancelTurn("t1"),
        StartTurn("Okay, stop."),
    ]
    assert not hands_free.hold.holding and hands_free.hold.due(20.0) is None


@pytest.mark.parametrize(
    "text", ["Mm-hmm.", "Okay.", "Uh-uh.", "I see.", "Yeah, yeah.", "Ooh!", ""]
)
def test_only_backchannels_or_nothing_resume_the_paused_reply_and_start_no_turn(
    hands_free: VoiceInput, text: str
) -> None:
    hands_free.turn_started("t1")
    hands_free.audio_sent(9.0, 3 * TTS_SECOND, "t1")  # plays until 12.0
    speak(hands_free, 640, 10.0, True)  # paused at 10.0, 2 s of it left
    hands_free.audio_sent(10.2, TTS_SECOND, "t1")  # streamed into the paused player
    assert hands_free.playback.left(30.0) == pytest.approx(3.0)  # the clock stands still
    assert hands_free.heard(text, 10.6, True) == [Send(ReplyResumed("t1"))]
    assert hands_free.playback.left(10.6) == pytest.approx(3.0)  # plays on from the pause
    assert not hands_free.playback.playing(13.6)
    assert hands_free.hold.due(20.0) is None  # resumed once


def test_a_transcript_over_no_paused_reply_is_a_turn_even_a_backchannel(
    hands_free: VoiceInput,
) -> None:
    assert hands_free.heard("Okay.", 10.0, False) == [StartTurn("Okay.")]
    assert hands_free.heard("", 10.0, False) == []


def test_no_words_by_the_resume_bound_plays_the_reply_on_and_later_words_still_cut_it(
    hands_free: VoiceInput,
) -> None:
    hands_free.turn_started("t1")
    speak(hands_free, 640, 10.0, True)
    assert hands_free.hold.due(11.49) is None
    assert hands_free.hold.due(11.5) == ReplyResumed("t1")
    assert (
        hands_free.hold.holding and hands_free.hold.due(12.0) is None
    )  # plays on; its words awaited
    # The words come after the bound: a backchannel is nothing more; other words cut it.
    assert hands_free.heard("Yeah.", 11.6, True) == []
    speak(hands_free, 800, 12.0, True, loud=False)
    speak(hands_free, 640, 13.0, True)
    assert hands_free.hold.due(14.5) == ReplyResumed("t1")
    assert hands_free.heard("What time is it?", 14.6, True)[0] == CancelTurn(None)  # none left


def test_a_frame_past_the_resume_bound_plays_the_reply_on(hands_free: VoiceInput) -> None:
    hands_free.turn_started("t1")
    speak(hands_free, 640, 10.0, True)
    speak(hands_free, 800, 10.0, True, loud=False)  # the utterance ends; its words are awaited
    assert speak(hands_free, 32, 11.5, True, loud=False) == [Send(ReplyResumed("t1"))]


def test_the_bound_reached_by_the_frame_that_ends_the_utterance_resumes_before_its_words(
    hands_free: VoiceInput,
) -> None:
    hands_free.turn_started("t1")
    speak(hands_free, 640, 10.0, True)
    actions = speak(hands_free, 800, 11.6, True, loud=False)  # late: past the bound
    assert actions[0] == Send(ReplyResumed("t1")) and isinstance(actions[-1], Recognize)
    assert hands_free.heard("Stop.", 11.7, True)[0] == CancelTurn(None)  # then the words cut it


def test_speech_past_the_interrupt_bound_cuts_the_paused_reply_without_its_words(
    hands_free: VoiceInput,
) -> None:
    hands_free.turn_started("t1")
    actions = speak(hands_free, 1280, 10.0, True)
    kinds = [type(a).__name__ for a in actions if not isinstance(a, Send)]
    assert kinds == ["PauseReply", "CancelTurn"]
    speak(hands_free, 800, 10.0, False, loud=False)
    assert hands_free.heard("Yeah okay.", 11.0, False) == [StartTurn("Yeah okay.")]


def test_listen_stop_plays_a_paused_reply_on(hands_free: VoiceInput) -> None:
    hands_free.turn_started("t1")
    speak(hands_free, 640, 10.0, True)
    ended, resumed, stopped = hands_free.listen_stop(10.5)
    assert isinstance(ended.event, SpeechEnd) and ended.event.reason == "listen.stop"  # type: ignore[union-attr]
    assert resumed == Send(ReplyResumed("t1")) and isinstance(stopped, Send)


def test_a_push_to_talk_press_over_the_reply_still_cuts_it_at_once() -> None:
    given = push_to_talk()
    given.turn_started("t1")
    given.audio_sent(10.0, 3 * TTS_SECOND, "t1")
    assert given.talk_start(10.5, True)[1:] == [CancelTurn("t1")]
    assert not given.hold.holding


def test_speech_while_an_ended_turn_still_plays_pauses_it_and_words_stop_it(
    hands_free: VoiceInput,
) -> None:
    hands_free.audio_sent(10.0, 5 * TTS_SECOND, "t1")
    actions = speak(hands_free, 640, 11.0, False)
    assert [a for a in actions if isinstance(a, PauseReply)] == [
        PauseReply(ReplyPaused("t1"), 12.5)
    ]
    assert not any(isinstance(a, CancelTurn) for a in actions)
    assert hands_free.heard("Wait.", 11.6, False) == [
        Send(TurnCancelled("t1")),
        StartTurn("Wait."),
    ]
    assert not hands_free.playback.playing(11.6)


def test_speech_while_the_agent_is_silent_cuts_nothing(hands_free: VoiceInput) -> None:
    hands_free.audio_sent(10.0, TTS_SECOND, "t1")  # played out at 11.0
    actions = speak(hands_free, 640, 12.0, False)
    assert not any(isinstance(a, CancelTurn) for a in actions)
    assert not any(isinstance(a, Send) and isinstance(a.event, TurnCancelled) for a in actions)
