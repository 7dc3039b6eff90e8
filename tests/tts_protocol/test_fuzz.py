"""``decode_client`` over hostile frames (arbitrary bytes, text and JSON values), and
``decode_server`` over hostile server messages.

Whatever arrives, the decoder either returns a valid client message or raises ``ProtocolError``
with one of the protocol's codes; any other exception (``RecursionError``, ``OverflowError``, a
``ValueError`` of the integer parser) would drop the connection without a close frame.
"""

from __future__ import annotations

import json
import math

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tts_protocol import (
    DEFAULT_MAX_TEXT_CHARS,
    MAX_ID_CHARS,
    MAX_SPEED,
    MIN_SPEED,
    Cancel,
    ClientMessage,
    Close,
    End,
    ErrorCode,
    Marks,
    ProtocolError,
    Speak,
    decode_client,
    decode_server,
    voice_name,
)

FUZZ = settings(max_examples=300, deadline=None)  # about a second each on one core

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
VOICES = st.text(alphabet="afbm_(0123456789.e+-)", max_size=16)  # names, blends and near-misses
FIELDS = {
    "id": JSON_VALUES | st.text(max_size=MAX_ID_CHARS + 2),
    "text": JSON_VALUES | st.text(max_size=40),
    "voice": JSON_VALUES | VOICES,
    "speed": JSON_VALUES | st.floats(0, 3) | st.integers(-(10**400), 10**400),
    "marks": JSON_VALUES,
}
MESSAGES = st.fixed_dictionaries(
    {"type": st.sampled_from(["speak", "cancel", "close"]) | JSON_VALUES},
    optional=FIELDS,  # type: ignore[arg-type]
)


def check(frame: str | bytes) -> ClientMessage | None:
    """Decode ``frame``: a valid message, or None for a typed refusal; anything else fails."""
    try:
        message = decode_client(frame)
    except ProtocolError as exc:
        assert isinstance(exc.code, ErrorCode)
        return None
    if isinstance(message, Speak):
        assert 0 < len(message.id) <= MAX_ID_CHARS
        assert message.text.strip() and len(message.text) <= DEFAULT_MAX_TEXT_CHARS
        assert message.voice is None or voice_name(message.voice)  # parsed: a canonical name
        assert MIN_SPEED <= message.speed <= MAX_SPEED and math.isfinite(message.speed)
        assert isinstance(message.marks, bool)
    else:
        assert isinstance(message, Cancel | Close)
    return message


@FUZZ
@given(st.binary(max_size=200))
@example(b"[" * 5000 + b"]" * 5000)
@example(b"1" * 5000)  # over Python's 4,300-digit limit for integers
@example(b"\xff\xfe{\x00}\x00")
def test_any_bytes_are_a_message_or_a_typed_error(frame: bytes) -> None:
    check(frame)


@FUZZ
@given(st.text(max_size=200))
@example("\ud800")  # a lone surrogate in a text frame
def test_any_text_is_a_message_or_a_typed_error(frame: str) -> None:
    check(frame)


@FUZZ
@given(JSON_VALUES)
def test_any_json_value_is_a_message_or_a_typed_error(value: object) -> None:
    check(json.dumps(value))


@FUZZ
@given(MESSAGES, st.booleans())
@example({"type": "speak", "id": "s", "text": "hi", "speed": 10**400}, False)
@example({"type": "speak", "id": "s", "text": "hi", "voice": "a(1e999)+b"}, True)
def test_any_message_shaped_object_is_a_message_or_a_typed_error(
    message: dict[str, object], binary: bool
) -> None:
    text = json.dumps(message)
    decoded = check(text.encode() if binary else text)
    if decoded is not None:
        assert decoded.type == message["type"]


def test_deep_nesting_in_a_field_is_invalid_json() -> None:
    frame = '{"type": "speak", "id": "s", "text": ' + "[" * 5000 + "]" * 5000 + "}"
    try:
        decode_client(frame)
    except ProtocolError as exc:
        assert exc.code == ErrorCode.INVALID_JSON
    else:
        raise AssertionError("5,000 nested arrays were accepted")


NUMBERS = st.integers(-(10**400), 10**400) | st.floats() | JSON_VALUES
SERVER_MESSAGES = st.fixed_dictionaries(
    {"type": st.sampled_from(["ready", "start", "marks", "end", "cancelled", "error"])},
    optional={  # type: ignore[arg-type]
        "id": JSON_VALUES,
        "samples": NUMBERS,
        "synth_ms": NUMBERS,
        "words": st.lists(
            st.fixed_dictionaries(
                {}, optional={"text": JSON_VALUES, "start_ms": NUMBERS, "end_ms": NUMBERS}
            ),  # type: ignore[arg-type]
            max_size=3,
        )
        | JSON_VALUES,
        "voices": JSON_VALUES,
        "code": JSON_VALUES,
    },
)


@FUZZ
@given(SERVER_MESSAGES)
@example({"type": "end", "id": "s", "samples": 1, "synth_ms": 10**400})
@example({"type": "marks", "id": "s", "words": [{"text": "a", "start_ms": 0, "end_ms": 10**400}]})
def test_any_server_shaped_object_is_a_message_or_a_typed_error(message: dict[str, object]) -> None:
    """The client's decoder, over what a broken or hostile server could send."""
    try:
        decoded = decode_server(json.dumps(message))
    except ProtocolError as exc:
        assert isinstance(exc.code, ErrorCode)
        return
    assert decoded.type == message["type"]
    if isinstance(decoded, End):
        assert decoded.samples >= 0 and math.isfinite(decoded.synth_ms)
    if isinstance(decoded, Marks):
        assert all(0 <= w.start_ms <= w.end_ms < math.inf for w in decoded.words)
