"""``/ws`` client messages without sockets: JSON in text and binary frames, each parsed once
into its typed message; typed refusals that name the message they reply to."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.browser_leg import MIC_MAGIC
from agent.leg.messages import (
    Cancel,
    Config,
    Defaults,
    Listen,
    ListenStop,
    MessageRefused,
    MicFrame,
    Prompt,
    TalkEnd,
    TalkStart,
    parse_config,
    parse_listen,
    parse_message,
)
from agent.requests import BadRequest, PlaybackReport, TurnRequest
from tts_protocol import parse_voice


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"{oops", "invalid_json"),
        (b"\xff\xfe\x00", "invalid_utf8"),
        ("\ud800", "invalid_utf8"),  # a lone surrogate: only an in-process caller sends one
        ("[" * 5000 + "]" * 5000, "invalid_json"),  # RecursionError in the decoder
        ('{"type": "prompt", "n": ' + "9" * 5000 + "}", "invalid_json"),  # int_max_str_digits
        ("[1, 2]", "invalid_message"),
        ('{"prompt": "hi"}', "invalid_message"),
        ('{"type": 3}', "invalid_message"),
        ('{"type": "dance"}', "unknown_type"),
        (json.dumps({"type": "prompt", "prompt": "x" * 32 * 1024}), "message_too_large"),  # 32 KiB
    ],
)
def test_a_bad_message_is_a_typed_refusal(data: str | bytes, code: str) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_message(data)
    assert refused.value.code == code


def test_json_is_read_from_text_and_binary_frames_alike() -> None:
    message = {"type": "prompt", "prompt": "Grüße"}
    text = json.dumps(message, ensure_ascii=False)
    parsed = parse_message(text)
    assert (
        parsed
        == parse_message(text.encode())
        == Prompt(TurnRequest("Grüße"), frozenset({"prompt"}))
    )


@pytest.mark.parametrize(
    ("message", "says"),
    [
        ({"voice": ""}, "'voice'"),
        ({"speed": 9}, "'speed' must be in [0.5, 2.0]"),
        ({"speed": "fast"}, "'speed'"),
        ({"mode": "loud"}, "'mode' must be one of stream, batch"),
        ({"marks": "yes"}, "'marks'"),
    ],
)
def test_a_bad_config_value_is_invalid_config_and_says_what_was_wrong(
    message: dict[str, Any], says: str
) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_config({"type": "config", **message})
    assert refused.value.code == "invalid_config" and says in refused.value.message


def test_an_unknown_config_field_is_refused_by_name() -> None:
    with pytest.raises(BadRequest) as refused:
        parse_config({"type": "config", "sped": 1.5})
    assert refused.value.code == "unknown_field"
    assert refused.value.message == (
        "unknown field 'sped'; the fields are type, voice, speed, mode, marks"
    )


def test_config_keeps_only_what_it_names_typed_and_as_sent() -> None:
    config = parse_config({"type": "config", "speed": 1.5, "voice": None})
    assert config == Config({"speed": 1.5, "voice": None}, {"speed": 1.5, "voice": None})
    blend = parse_config({"type": "config", "voice": "jf_alpha+jm_kumo", "speed": 1})
    assert blend.options == {"voice": parse_voice("jf_alpha+jm_kumo"), "speed": 1.0}
    assert blend.sent == {"voice": "jf_alpha+jm_kumo", "speed": 1}  # echoed as sent


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{oops", "the message is not JSON: Expecting property name enclosed in double quotes"),
        ("[1, 2]", "a message is a JSON object with a string 'type'"),
        (
            '{"type": "dance"}',
            "unknown message type 'dance'; try prompt, cancel, config, heard, listen, "
            "listen.stop, talk.start, talk.end",
        ),
    ],
)
def test_a_refusal_says_what_a_message_must_be(data: str | bytes, message: str) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_message(data)
    assert refused.value.message.startswith(message)


def test_a_message_of_exactly_32_kib_is_read_and_one_byte_more_is_refused() -> None:
    head, tail = '{"type": "cancel"', "}"  # JSON may pad with whitespace
    exact = head + " " * (32 * 1024 - len(head) - len(tail)) + tail
    assert len(exact.encode()) == 32 * 1024
    assert isinstance(parse_message(exact), Cancel)
    with pytest.raises(BadRequest) as refused:
        parse_message(head + " " + exact[len(head) :])
    assert refused.value.code == "message_too_large"
    assert refused.value.message == "a message is at most 32768 bytes"


@pytest.mark.parametrize(
    ("message", "parsed"),
    [
        ({"type": "cancel"}, Cancel()),
        ({"type": "listen.stop"}, ListenStop()),
        ({"type": "talk.start"}, TalkStart()),
        ({"type": "talk.end"}, TalkEnd()),
        ({"type": "listen", "mode": "push_to_talk"}, Listen("push_to_talk")),
        (
            {"type": "listen", "mode": "hands_free", "sample_rate": 16000, "format": "s16le"},
            Listen("hands_free"),
        ),
        ({"type": "heard", "turn_id": "t1", "seq": 2, "ms": 350}, PlaybackReport("t1", 2, 350.0)),
    ],
)
def test_each_message_type_is_parsed_to_its_own_type(
    message: dict[str, Any], parsed: object
) -> None:
    assert parse_message(json.dumps(message)) == parsed
    assert parse_message(json.dumps(message).encode()) == parsed  # a binary frame alike


@pytest.mark.parametrize(
    ("message", "code", "in_reply_to"),
    [
        ({"type": "cancel", "turn": 1}, "unknown_field", "cancel"),
        ({"type": "talk.end", "x": 1}, "unknown_field", "talk.end"),
        ({"type": "heard", "turn_id": "t1", "seq": -1, "ms": 0}, "invalid_heard", "heard"),
        ({"type": "heard", "turn_id": "t1"}, "invalid_heard", "heard"),
        ({"type": "prompt", "prompt": " "}, "invalid_prompt", "prompt"),
        ({"type": "prompt", "prompt": "x" * 4001}, "prompt_too_long", "prompt"),
        ({"type": "prompt", "prompt": "Hi", "speed": 9}, "invalid_speed", "prompt"),
        ({"type": "config", "speed": 9}, "invalid_config", "config"),
        ({"type": "listen"}, "invalid_listen", "listen"),
    ],
)
def test_a_refusal_names_the_message_it_replies_to(
    message: dict[str, Any], code: str, in_reply_to: str
) -> None:
    with pytest.raises(MessageRefused) as refused:
        parse_message(json.dumps(message))
    assert (refused.value.code, refused.value.in_reply_to) == (code, in_reply_to)


def test_a_message_that_cannot_be_read_replies_to_nothing() -> None:
    with pytest.raises(MessageRefused) as refused:
        parse_message("{oops")
    assert refused.value.in_reply_to is None


def test_a_binary_frame_with_the_mic_magic_is_audio_whatever_follows() -> None:
    assert parse_message(MIC_MAGIC + b"\x01\x00") == MicFrame(b"\x01\x00")
    assert parse_message(MIC_MAGIC) == MicFrame(b"")  # checked by the socket's voice input
    assert isinstance(parse_message(b'{"type": "cancel"}'), Cancel)  # JSON never starts so


def test_a_prompt_takes_the_defaults_for_the_fields_it_left_out_only() -> None:
    report = PlaybackReport("t1", 0, 120.0)
    config = parse_config({"type": "config", "voice": "jm_kumo", "speed": 1.5, "marks": True})
    defaults = Defaults().configured(config).played(report)
    prompt = parse_message(json.dumps({"type": "prompt", "prompt": "Hi", "speed": 0.8}))
    assert isinstance(prompt, Prompt)
    assert defaults.turn(prompt) == TurnRequest(
        "Hi", voice=parse_voice("jm_kumo"), speed=0.8, marks=True, heard=report
    )
    unset = parse_message(json.dumps({"type": "prompt", "prompt": "Hi", "voice": None}))
    assert isinstance(unset, Prompt) and defaults.turn(unset).voice is None  # null wins
    no_report = parse_message(json.dumps({"type": "prompt", "prompt": "Hi", "heard": None}))
    assert isinstance(no_report, Prompt) and defaults.turn(no_report).heard is None


def test_a_transcript_is_a_turn_of_the_defaults_with_no_prompt_limit() -> None:
    defaults = Defaults().configured(parse_config({"type": "config", "mode": "batch"}))
    long_text = "word " * 1000  # over a typed prompt's 4000 characters: speech is not refused
    assert defaults.turn(long_text) == TurnRequest(long_text, mode="batch")


def test_config_null_unsets_a_default_and_the_echo_drops_it() -> None:
    defaults = Defaults().configured(
        parse_config({"type": "config", "speed": 1.5, "voice": "jm_kumo"})
    )
    defaults = defaults.configured(parse_config({"type": "config", "speed": None}))
    assert defaults.sent == {"voice": "jm_kumo"}
    assert (defaults.request.speed, defaults.request.voice) == (1.0, parse_voice("jm_kumo"))


def test_a_report_goes_with_the_next_prompt_only() -> None:
    defaults = Defaults().played(PlaybackReport("t1", 0, 5.0))
    assert defaults.turn("Hi").heard is not None
    assert defaults.played(None).turn("Hi").heard is None


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({}, "invalid_listen"),
        ({"mode": "walkie_talkie"}, "invalid_listen"),
        ({"mode": "hands_free", "sample_rate": 8000}, "unsupported_audio_format"),
        ({"mode": "hands_free", "sample_rate": "16000"}, "unsupported_audio_format"),
        ({"mode": "hands_free", "format": "f32le"}, "unsupported_audio_format"),
        ({"mode": "hands_free", "channels": 2}, "unknown_field"),
    ],
)
def test_a_bad_listen_is_a_typed_refusal(message: dict[str, object], code: str) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_listen({"type": "listen", **message})
    assert refused.value.code == code


def test_a_bad_listen_says_what_a_listen_must_be() -> None:
    with pytest.raises(BadRequest) as mode:
        parse_listen({"type": "listen", "mode": "loud"})
    assert mode.value.message == "'mode' must be one of hands_free, push_to_talk"
    with pytest.raises(BadRequest) as rate:
        parse_listen({"type": "listen", "mode": "hands_free", "sample_rate": 8000})
    assert rate.value.message == "audio must be s16le mono at 16000 Hz, not 's16le' at 8000"


def test_a_reply_that_plays_on_drops_the_report_of_its_pause_and_only_its_own() -> None:
    paused = Defaults().played(PlaybackReport("t1", 2, 812.5))
    assert paused.resumed("t2").request.heard == PlaybackReport("t1", 2, 812.5)
    assert paused.resumed("t1").request.heard is None
    assert Defaults().resumed("t1") == Defaults()
