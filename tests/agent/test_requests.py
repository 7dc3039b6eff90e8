"""The request parsers: a POST body's JSON and fields; the options a prompt and a config share."""

from __future__ import annotations

import json

import pytest

from agent.requests import (
    BadRequest,
    TurnOptions,
    TurnRequest,
    check_options,
    decode_json,
    json_depth,
    parse_request,
)


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ([], "invalid_request"),
        ({}, "invalid_prompt"),
        ({"prompt": 3}, "invalid_prompt"),
        ({"prompt": "  "}, "invalid_prompt"),
        ({"prompt": "x" * 5000}, "prompt_too_long"),
        ({"prompt": "hi", "mode": "fast"}, "invalid_mode"),
        ({"prompt": "hi", "voice": 7}, "invalid_voice"),
        ({"prompt": "hi", "speed": "1"}, "invalid_speed"),
        ({"prompt": "hi", "speed": 9}, "invalid_speed"),
        ({"prompt": "hi", "speed": float("nan")}, "invalid_speed"),
        ({"prompt": "hi", "sped": 1.5}, "unknown_field"),
        ({"prompt": "hi", "type": "prompt"}, "unknown_field"),  # a /ws message's, not a body's
    ],
)
def test_bad_requests_are_typed(payload: object, code: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_request(payload)
    assert caught.value.code == code


def test_good_request() -> None:
    assert parse_request({"prompt": "hi", "mode": "batch", "voice": "v", "speed": 1}) == (
        TurnRequest("hi", "batch", (("v", 1.0),), 1.0)  # the voice parsed, once, here
    )
    blend = parse_request({"prompt": "hi", "voice": "b(1)+a(3)"})
    assert blend.voice == (("a", 0.75), ("b", 0.25))


def test_options_absent_are_their_defaults() -> None:
    assert check_options({}) == TurnOptions("stream", None, 1.0, False)
    assert check_options({"mode": "batch", "speed": 2, "marks": True}) == TurnOptions(
        "batch", None, 2.0, True
    )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"[" * 5000 + b"]" * 5000, "nested too deeply"),  # RecursionError in json.loads
        (b"[" * 33 + b"]" * 33, "over 32"),
        (b"1" * 5000, "digits"),  # over Python's int_max_str_digits: a ValueError
        (b"{oops", "not JSON"),
        (b"", "not JSON"),
    ],
)
def test_every_decoder_failure_is_invalid_json(data: bytes, reason: str) -> None:
    with pytest.raises(BadRequest) as refused:
        decode_json(data, "the body")
    assert refused.value.code == "invalid_json" and reason in refused.value.message


def test_a_typo_is_refused_naming_the_field_and_the_fields_there_are() -> None:
    with pytest.raises(BadRequest) as refused:
        parse_request({"prompt": "hi", "sped": 1.5, "voise": "af"})
    assert refused.value.code == "unknown_field"
    assert refused.value.message == (
        "unknown fields 'sped', 'voise'; the fields are prompt, voice, speed, mode, marks, heard"
    )


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b"\xff\xfe\x00", "at byte 0"),
        (b'{"prompt": "caf\xe9"}', "at byte 15"),  # Latin-1, not UTF-8
        ("\ud800".encode(errors="surrogatepass"), "at byte 0"),  # a lone surrogate
    ],
)
def test_bytes_that_are_not_utf8_are_invalid_utf8(data: bytes, where: str) -> None:
    with pytest.raises(BadRequest) as refused:
        decode_json(data, "the body")
    assert refused.value.code == "invalid_utf8"
    assert (
        refused.value.message.startswith("the body is not UTF-8") and where in refused.value.message
    )


def test_json_up_to_the_depth_limit_is_read() -> None:
    nested: object = "deep"
    for _ in range(32):  # the limit
        nested = {"a": [nested]} if len(str(nested)) % 2 else [nested]
    assert json_depth(nested) == 32
    assert decode_json(json.dumps(nested), "the body") == nested
    assert [json_depth(v) for v in (1, "x", [], {}, [[], {"a": [1]}])] == [0, 0, 1, 1, 3]
