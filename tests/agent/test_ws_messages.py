"""``/ws`` client messages without sockets: JSON in text and binary frames, typed refusals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.requests import BadRequest
from agent.ws_messages import parse_config, parse_message


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
    assert parse_message(text) == parse_message(text.encode()) == message


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


def test_config_keeps_only_what_it_names() -> None:
    assert parse_config({"type": "config", "speed": 1.5, "voice": None}) == {
        "speed": 1.5,
        "voice": None,
    }


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
    head = '{"type": "prompt", "prompt": "'
    exact = head + "x" * (32 * 1024 - len(head) - 2) + '"}'
    assert len(exact.encode()) == 32 * 1024
    assert parse_message(exact)["type"] == "prompt"
    with pytest.raises(BadRequest) as refused:
        parse_message(exact[:-2] + 'x"}')
    assert refused.value.code == "message_too_large"
    assert refused.value.message == "a message is at most 32768 bytes"
