"""The field validators that the server's decoder and the agent's requests share."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tts_protocol import (
    MAX_SPEED,
    MIN_SPEED,
    ErrorCode,
    ProtocolError,
    check_id,
    check_marks,
    check_normalize,
    check_speed,
    check_text,
    check_voice,
    speak_fields,
)
from tts_protocol.validation import MAX_BLEND_VOICES, check_fields, parse_voice, voice_name


def _fails(check: object, *args: object) -> tuple[ErrorCode, str | None]:
    with pytest.raises(ProtocolError) as caught:
        check(*args)  # type: ignore[operator]
    return caught.value.code, caught.value.id


@pytest.mark.parametrize("speed", [MIN_SPEED, 1, 1.25, MAX_SPEED])
def test_speeds_in_range_pass_as_floats(speed: float) -> None:
    checked = check_speed(speed)
    assert checked == speed and isinstance(checked, float)


def test_no_speed_is_the_default_speed() -> None:
    assert check_speed(None) == 1.0 and isinstance(check_speed(None), float)


@pytest.mark.parametrize("speed", [0.49, 2.01, 0.0, -1.0, math.nan, math.inf, True, "1", [1]])
def test_bad_speeds_are_invalid_messages_naming_the_segment(speed: object) -> None:
    assert _fails(check_speed, speed, "seg") == (ErrorCode.INVALID_MESSAGE, "seg")


@pytest.mark.parametrize("voice", ["", 3, ["af"], False])
def test_bad_voices_are_invalid_messages(voice: object) -> None:
    assert _fails(check_voice, voice, "seg") == (ErrorCode.INVALID_MESSAGE, "seg")


def test_voice_names_are_not_checked_for_existence_here() -> None:
    assert check_voice("xx_nobody") == (("xx_nobody", 1.0),)
    assert check_voice(None) is None


def test_ids_are_bounded_non_empty_strings() -> None:
    assert check_id("a" * 128) == "a" * 128
    assert check_id(None) is None
    for bad in ("", "a" * 129, 7):
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
        (("v", 1.0),),
        2.0,
    )
    assert speak_fields({"id": "a", "text": "hi"}) == ("a", "hi", None, 1.0)


@pytest.mark.parametrize(
    ("voice", "mix", "name"),
    [
        ("af_heart", (("af_heart", 1.0),), "af_heart"),
        ("af_heart(0.5)", (("af_heart", 1.0),), "af_heart"),
        (
            "am_michael+af_heart",
            (("af_heart", 0.5), ("am_michael", 0.5)),
            "af_heart(0.5)+am_michael(0.5)",
        ),
        (
            " af_heart( 7 ) + am_michael(3) ",
            (("af_heart", 0.7), ("am_michael", 0.3)),
            "af_heart(0.7)+am_michael(0.3)",
        ),
        ("a+b+c", (("a", 1 / 3), ("b", 1 / 3), ("c", 1 / 3)), "a(0.3334)+b(0.3333)+c(0.3333)"),
    ],
)
def test_blends_parse_to_sorted_shares_and_one_canonical_name(
    voice: str, mix: tuple[tuple[str, float], ...], name: str
) -> None:
    parsed = parse_voice(voice)
    assert [n for n, _ in parsed] == [n for n, _ in mix]
    assert [s for _, s in parsed] == pytest.approx([s for _, s in mix])
    assert voice_name(parsed) == name
    assert check_voice(voice) == parsed  # the validator hands on the parsed mix


@pytest.mark.parametrize(
    ("voice", "problem"),
    [
        ("a++b", "'' is not 'name' or 'name(weight)'"),
        ("a+", "'' is not 'name' or 'name(weight)'"),
        ("a b", "'a b' is not 'name' or 'name(weight)'"),
        ("a(1", "'a(1' is not 'name' or 'name(weight)'"),
        ("a(0.5)(2)", "is not 'name' or 'name(weight)'"),
        ("a(0)+b", "weight '0' must be a positive number"),
        ("a(-1)+b", "weight '-1' must be a positive number"),
        ("a(inf)+b", "weight 'inf' must be a positive number"),
        ("a(half)+b", "weight 'half' is not a number"),
        ("a+a", "'a' appears twice"),
        ("a(1)+b(0.00001)", "the share of 'b' is below 1/10000"),
        ("+".join(f"v{i}" for i in range(9)), "at most 8"),
    ],
)
def test_malformed_blends_are_invalid_messages_naming_the_problem(voice: str, problem: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        check_voice(voice, "seg")
    assert (caught.value.code, caught.value.id) == (ErrorCode.INVALID_MESSAGE, "seg")
    assert problem in caught.value.message


@given(
    st.dictionaries(
        st.from_regex(r"[a-z]{1,3}_[a-z]{1,6}", fullmatch=True),
        st.floats(min_value=0.1, max_value=100),  # every share stays above 1/10000
        min_size=2,
        max_size=MAX_BLEND_VOICES,
    )
)
def test_the_canonical_name_reads_back_as_itself_with_shares_summing_to_one(
    weights: dict[str, float],
) -> None:
    name = voice_name(parse_voice("+".join(f"{v}({w!r})" for v, w in weights.items())))
    assert voice_name(parse_voice(name)) == name
    assert sum(share for _, share in parse_voice(name)) == pytest.approx(1.0)


def test_omitted_weights_count_one_beside_given_ones() -> None:
    assert parse_voice("a+b(0.5)") == (("a", 2 / 3), ("b", 1 / 3))


def test_the_smallest_share_is_one_step() -> None:
    assert parse_voice("a(1)+b(9999)") == (("a", 0.0001), ("b", 0.9999))  # one step of 10,000
    with pytest.raises(ProtocolError):
        parse_voice("a(1)+b(99999)")


def test_the_rounding_step_goes_to_the_largest_remainder() -> None:
    assert voice_name(parse_voice("a(1)+b(2)")) == "a(0.3333)+b(0.6667)"
    assert voice_name(parse_voice("b(2)+a(1)")) == "a(0.3333)+b(0.6667)"
    assert voice_name(parse_voice("a+b+c")) == "a(0.3334)+b(0.3333)+c(0.3333)"


def _message(check: object, *args: object) -> str:
    with pytest.raises(ProtocolError) as caught:
        check(*args)  # type: ignore[operator]
    return str(caught.value.message)


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (lambda v: check_text(v, 100, "s1"), 7, "'text' must be a string"),
        (lambda v: check_voice(v, "s1"), "", "'voice' must be a non-empty string"),
        (lambda v: check_speed(v, "s1"), "fast", "'speed' must be a number"),
        (lambda v: check_marks(v, "s1"), "yes", "'marks' must be true or false"),
        (lambda v: check_normalize(v, "s1"), 1, "'normalize' must be true or false"),
        (lambda v: speak_fields(v), {"text": "Hi."}, "'speak' needs an 'id'"),
    ],
)
def test_each_refusal_says_what_is_wrong_word_for_word(
    check: object, value: object, message: str
) -> None:
    assert _message(check, value) == message


def test_a_bad_normalize_names_its_segment() -> None:
    assert _fails(check_normalize, "no", "s7") == (ErrorCode.INVALID_MESSAGE, "s7")


def test_an_unknown_field_is_named_with_the_known_ones_and_the_segment() -> None:
    with pytest.raises(ProtocolError) as caught:
        check_fields({"id": "s1", "sped": 2, "colour": 1}, ("id", "text", "speed"), "a 'speak'")
    assert caught.value.message == (
        "unrecognized field 'sped', 'colour' in a 'speak'; the fields are id, text, speed"
    )
    assert caught.value.id == "s1"


def test_an_unknown_field_beside_an_id_that_is_not_a_string_names_no_segment() -> None:
    assert _fails(check_fields, {"id": 5, "x": 1}, ("id",), "a 'speak'") == (
        ErrorCode.INVALID_MESSAGE,
        None,
    )


def test_a_share_exactly_at_the_rounding_allowance_below_one_step_is_accepted() -> None:
    # 0.999999 / 10000 of the total: one step less the allowed float error, exactly
    mix = parse_voice("a(0.999999)+b(9999.000001)")
    assert mix[0][0] == "a" and mix[0][1] * 10_000 == 1 - 1e-6
