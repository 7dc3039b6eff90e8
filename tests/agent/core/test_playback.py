"""What the page still plays: chunks queue behind each other, and late ones wait for none."""

from __future__ import annotations

from agent.core.playback import Playback

SECOND = 24_000  # samples of TTS audio


def test_audio_sent_faster_than_real_time_plays_on_after_it_was_sent() -> None:
    playback = Playback()
    for _ in range(30):  # 3 s of audio, all sent at t = 10
        playback.sent(10.0, SECOND // 10, "turn-a")
    assert round(playback.until, 6) == 13.0 and playback.turn_id == "turn-a"
    assert playback.playing(12.9) and not playback.playing(13.001)
    assert round(playback.left(12.5), 6) == 0.5 and playback.left(14.0) == 0.0


def test_a_chunk_that_comes_after_the_last_one_ended_starts_when_it_comes() -> None:
    playback = Playback()
    playback.sent(10.0, SECOND // 10, "turn-a")  # plays 10.0 - 10.1
    playback.sent(11.0, SECOND // 10, "turn-a")  # an underrun: plays 11.0 - 11.1
    assert round(playback.until, 3) == 11.1


def test_stopped_playback_plays_nothing() -> None:
    playback = Playback()
    playback.sent(10.0, SECOND, "turn-a")
    playback.stop()
    assert not playback.playing(10.0)


def test_nothing_plays_before_any_audio_and_audio_ends_at_its_last_sample() -> None:
    playback = Playback()
    assert not playback.playing(0.5) and playback.left(0.5) == 0.0
    assert playback.turn_id is None
    playback.sent(10.0, SECOND, "turn-a")
    assert playback.playing(10.999) and not playback.playing(11.0)


def test_stopped_playback_has_nothing_left_even_early_on_the_clock() -> None:
    playback = Playback()
    playback.sent(0.1, SECOND, "turn-a")
    playback.stop()
    assert not playback.playing(0.5) and playback.left(0.5) == 0.0


def test_a_paused_player_holds_what_it_had_left_and_what_comes_until_it_resumes() -> None:
    playback = Playback()
    playback.sent(10.0, 3 * SECOND, "turn-a")  # plays 10 - 13
    playback.pause(11.0)  # 2 s left, held
    assert playback.left(11.0) == playback.left(60.0) == 2.0 and playback.playing(60.0)
    playback.sent(12.0, SECOND, "turn-a")  # streams into the paused player: after the 2 s
    playback.pause(12.5)  # a second pause changes nothing
    assert playback.left(40.0) == 3.0
    playback.resume(20.0)  # plays on from where it paused
    assert playback.until == 23.0 and playback.playing(22.9) and not playback.playing(23.0)
    playback.resume(21.0)  # not paused: nothing moves
    assert playback.until == 23.0


def test_a_stop_or_a_new_turn_ends_a_pause() -> None:
    playback = Playback()
    playback.sent(10.0, SECOND, "turn-a")
    playback.pause(10.5)
    playback.stop()
    assert not playback.playing(10.5)
    playback.sent(11.0, SECOND, "turn-a")
    playback.pause(11.5)
    playback.started("turn-b")
    assert not playback.playing(11.5) and playback.turn_id == "turn-b"
    playback.sent(12.0, SECOND, "turn-b")
    assert playback.until == 13.0  # plays as it comes, not paused
