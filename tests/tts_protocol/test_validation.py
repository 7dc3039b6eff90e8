"""The field validators that the server's decoder and the agent's requests share."""

from __future__ import annotations

import math

import pytest

from tts_protocol import (
    MAX_ID_CHARS,
    MAX_SPEED,
    MIN_SPEED,
    ErrorCode,
    ProtocolError,
    check_id,
    check_speed,
    check_text,
    check_voice,
    speak_fields,
)


def _fails(check: object, *args: object) -> tuple[ErrorCode, str | None]:
    with pytest.raises(ProtocolError) as caught:
        check(*args)  # type: ignore[operator]
    return caught.value.code, caught.value.id


@pytest.mark.parametrize("speed", [MIN_SPEED, 1, 1.25, MAX_SPEED, None])
def test_speeds_in_range_pass_as_floats(speed: float | None) -> None:
    checked = check_speed(speed)
    assert checked == speed and (checked is None or isinstance(checked, float))


@pytest.mark.parametrize(
    "speed", [MIN_SPEED - 0.01, MAX_SPEED + 0.01, math.nan, math.inf, True, "1", [1]]
)
def test_bad_speeds_are_invalid_messages_naming_the_segment(speed: object) -> None:
    assert _fails(check_speed, speed, "seg") == (ErrorCode.INVALID_MESSAGE, "seg")


@pytest.mark.parametrize("voice", ["", 3, ["af"], False])
def test_bad_voices_are_invalid_messages(voice: object) -> None:
    assert _fails(check_voice, voice, "seg") == (ErrorCode.INVALID_MESSAGE, "seg")


def test_voice_names_are_not_checked_for_existence_here() -> None:
    assert check_voice("xx_nobody") == "xx_nobody"
    assert check_voice(None) is None


def test_ids_are_bounded_non_empty_strings() -> None:
    assert check_id("a" * MAX_ID_CHARS) == "a" * MAX_ID_CHARS
    assert check_id(None) is None
    for bad in ("", "a" * (MAX_ID_CHARS + 1), 7):
        assert _fails(check_id, bad) == (ErrorCode.INVALID_MESSAGE, None)


def test_text_checks_order_type_then_empty_then_length() -> None:
    assert _fails(check_text, 5, 10, "s") == (ErrorCode.INVALID_MESSAGE, "s")
    assert _fails(check_text, " \n\t", 10, "s") == (ErrorCode.EMPTY_TEXT, "s")
    assert _fails(check_text, "x" * 11, 10, "s") == (ErrorCode.TEXT_TOO_LONG, "s")
    assert check_text("x" * 10, 10) == "x" * 10


def test_speak_fields_needs_an_id_first() -> None:
    assert _fails(speak_fields, {"text": "hi"}) == (ErrorCode.INVALID_MESSAGE, None)
    assert speak_fields({"id": "a", "text": "hi", "voice": "v", "speed": 2}) == (
        "a",
        "hi",
        "v",
        2.0,
    )
