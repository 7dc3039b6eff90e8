"""Protocol v1 messages: round trips and every error code, without any I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from tts_protocol import (
    Cancel,
    Cancelled,
    Close,
    End,
    Error,
    ErrorCode,
    Marks,
    ProtocolError,
    Ready,
    Speak,
    Start,
    Word,
    decode_client,
    decode_server,
    encode,
    parse_object,
)

CLIENT_MESSAGES = [
    Speak(id="s1", text="Hello there."),
    Speak(id="s2", text="Fast.", voice=(("jf_alpha", 1.0),), speed=1.5),
    Speak(id="s4", text="Blended.", voice=(("af_heart", 0.7), ("am_adam", 0.3))),
    Speak(id="s3", text="Timed.", marks=True),
    Speak(id="s5", text="As written: $5.", normalize=False),
    Speak(id="s6", text="Second reply.", reply="turn-2"),
    Cancel(id="s1"),
    Cancel(),
    Close(),
]
SERVER_MESSAGES = [
    Ready(voices=("a", "b"), default_voice="a"),
    Ready(("a",), "a", protocol=2, sample_rate=16000, format="pcm_f32le", channels=2),
    Start(id="s1"),
    Marks(id="s1", words=(Word("Hello", 80.0, 397.5), Word("wörld", 472.0, 940.0))),
    Marks(id="s1", words=()),
    Marks(id="s3", words=(Word("a", 5.0, 5.0),)),  # a word of no length: start_ms == end_ms
    Marks(id="s2", words=(Word("$5", 0.0, 420.0, "five dollars"), Word("now", 430.0, 700.0))),
    End(id="s1", samples=24000, synth_ms=12.5),
    Cancelled(id="s1"),
    Error(id="s1", code=ErrorCode.UNKNOWN_VOICE, message="no such voice"),
    Error(id=None, code=ErrorCode.INVALID_JSON, message="bad frame"),
]


@pytest.mark.parametrize("message", CLIENT_MESSAGES, ids=repr)
def test_client_messages_round_trip_in_text_and_binary_frames(message: object) -> None:
    text = encode(message)  # type: ignore[arg-type]
    assert decode_client(text) == message
    assert decode_client(text.encode("utf-8")) == message


@pytest.mark.parametrize("message", SERVER_MESSAGES, ids=repr)
def test_server_messages_round_trip(message: object) -> None:
    assert decode_server(encode(message)) == message  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("message", "wire"),
    [
        (
            Speak(id="s1", text="Grüße aus 東京"),
            '{"id":"s1","text":"Grüße aus 東京","type":"speak"}',
        ),
        (
            Speak("s2", "Hi.", (("af_heart", 0.7), ("am_adam", 0.3)), 1.5, True, False),
            '{"id":"s2","text":"Hi.","voice":"af_heart(0.7)+am_adam(0.3)","speed":1.5,'
            '"marks":true,"normalize":false,"type":"speak"}',
        ),
        (Cancel(id="s1"), '{"id":"s1","type":"cancel"}'),
        (Close(), '{"type":"close"}'),
        (
            Ready(voices=("af_heart",), default_voice="af_heart"),
            '{"voices":["af_heart"],"default_voice":"af_heart","protocol":1,'
            '"sample_rate":24000,"format":"pcm_s16le","channels":1,"type":"ready"}',
        ),
        (
            Marks(id="s1", words=(Word("5 €", 0.0, 420.5, "fünf Euro"),)),
            '{"id":"s1","words":[{"text":"5 €","start_ms":0.0,"end_ms":420.5,'
            '"spoken":"fünf Euro"}],"type":"marks"}',
        ),
        (
            Error(id=None, code=ErrorCode.UNSUPPORTED_TEXT, message="cannot speak (東京)"),
            '{"id":null,"code":"unsupported_text","message":"cannot speak (東京)","type":"error"}',
        ),
    ],
    ids=["speak", "speak-every-field", "cancel", "close", "ready", "marks", "error"],
)
def test_encode_writes_compact_json_with_non_ascii_as_utf8(message: object, wire: str) -> None:
    """The bytes are the contract: no spaces after separators, no \\u escapes."""
    assert encode(message) == wire  # type: ignore[arg-type]


def test_encoding_omits_unset_optional_fields() -> None:
    assert json.loads(encode(Speak(id="x", text="Hi."))) == {
        "type": "speak",
        "id": "x",
        "text": "Hi.",
    }
    assert json.loads(encode(Cancel())) == {"type": "cancel"}


def test_ready_announces_the_audio_format() -> None:
    ready = json.loads(encode(Ready(voices=("v",), default_voice="v")))
    assert ready == {
        "type": "ready",
        "protocol": 1,
        "sample_rate": 24000,
        "format": "pcm_s16le",
        "channels": 1,
        "voices": ["v"],
        "default_voice": "v",
    }


def _code(data: str | bytes, **kwargs: int) -> tuple[ErrorCode, str | None]:
    with pytest.raises(ProtocolError) as caught:
        decode_client(data, **kwargs)
    return caught.value.code, caught.value.id


@pytest.mark.parametrize(
    ("frame", "code", "segment"),
    [
        (b"\x00\x01garbage", ErrorCode.INVALID_JSON, None),
        (b"\xff\xfe{}", ErrorCode.INVALID_JSON, None),  # not UTF-8
        ("{not json", ErrorCode.INVALID_JSON, None),
        ("", ErrorCode.INVALID_JSON, None),
        ('["speak"]', ErrorCode.INVALID_MESSAGE, None),
        ('"speak"', ErrorCode.INVALID_MESSAGE, None),
        ('{"text": "hi"}', ErrorCode.INVALID_MESSAGE, None),
        ('{"type": "sing", "id": "a"}', ErrorCode.INVALID_MESSAGE, "a"),
        ('{"type": "speak", "text": "hi"}', ErrorCode.INVALID_MESSAGE, None),
        ('{"type": "speak", "id": 7, "text": "hi"}', ErrorCode.INVALID_MESSAGE, None),
        ('{"type": "speak", "id": "", "text": "hi"}', ErrorCode.INVALID_MESSAGE, None),
        ('{"type": "speak", "id": "a"}', ErrorCode.INVALID_MESSAGE, "a"),
        ('{"type": "speak", "id": "a", "text": 5}', ErrorCode.INVALID_MESSAGE, "a"),
        ('{"type": "speak", "id": "a", "text": "  \\n"}', ErrorCode.EMPTY_TEXT, "a"),
        ('{"type": "speak", "id": "a", "text": "hi", "voice": 3}', ErrorCode.INVALID_MESSAGE, "a"),
        ('{"type": "speak", "id": "a", "text": "hi", "speed": 9}', ErrorCode.INVALID_MESSAGE, "a"),
        (
            '{"type": "speak", "id": "a", "text": "hi", "speed": true}',
            ErrorCode.INVALID_MESSAGE,
            "a",
        ),
        (
            '{"type": "speak", "id": "a", "text": "hi", "speed": "1"}',
            ErrorCode.INVALID_MESSAGE,
            "a",
        ),
        ('{"type": "cancel", "id": 5}', ErrorCode.INVALID_MESSAGE, None),
    ],
)
def test_bad_client_frames_get_typed_codes(
    frame: str | bytes, code: ErrorCode, segment: str | None
) -> None:
    assert _code(frame) == (code, segment)


def test_text_length_is_bounded() -> None:
    frame = encode(Speak(id="long", text="word " * 100))
    assert _code(frame, max_text_chars=100) == (ErrorCode.TEXT_TOO_LONG, "long")
    assert decode_client(frame, max_text_chars=500) == Speak(id="long", text="word " * 100)


def test_speed_bounds_are_inclusive_and_ints_become_floats() -> None:
    message = decode_client('{"type": "speak", "id": "a", "text": "hi", "speed": 2}')
    assert message == Speak(id="a", text="hi", speed=2.0)
    assert isinstance(message, Speak) and isinstance(message.speed, float)
    assert decode_client('{"type":"speak","id":"a","text":"hi","speed":0.5}') == Speak(
        id="a", text="hi", speed=0.5
    )


def test_protocol_error_becomes_an_error_frame() -> None:
    error = Error.of(ProtocolError(ErrorCode.QUEUE_FULL, "too many", "s9"))
    assert decode_server(encode(error)) == Error(
        id="s9", code=ErrorCode.QUEUE_FULL, message="too many"
    )


def test_every_error_code_survives_the_wire() -> None:
    for code in ErrorCode:
        assert decode_server(encode(Error(id=None, code=code, message="m"))).code is code  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "fields",
    [
        {"samples": -1, "synth_ms": 1},
        {"samples": 10, "synth_ms": 10**400},
        {"samples": 10, "synth_ms": -1e999},
    ],
)
def test_an_end_with_impossible_figures_is_refused(fields: dict[str, int | float]) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_server(json.dumps({"type": "end", "id": "s1", **fields}))
    assert caught.value.code is ErrorCode.INVALID_MESSAGE


def test_unknown_server_error_code_is_reported_as_internal() -> None:
    message = decode_server('{"type": "error", "id": null, "code": "new_code", "message": "x"}')
    assert message == Error(id=None, code=ErrorCode.INTERNAL, message="x")


@pytest.mark.parametrize("decode", [decode_client, decode_server], ids=["client", "server"])
@pytest.mark.parametrize(
    ("frame", "code", "message"),
    [
        (
            b"\xff\xfe{}",
            ErrorCode.INVALID_JSON,
            r"frame is not UTF-8: 'utf-8' codec can't decode byte 0xff in position 0: "
            r"invalid start byte",
        ),
        (
            "{not json",
            ErrorCode.INVALID_JSON,
            r"frame is not JSON: Expecting property name enclosed in double quotes",
        ),
        ("[" * 5000 + "]" * 5000, ErrorCode.INVALID_JSON, r"frame is nested too deeply"),
        (
            '{"n": 1' + "0" * 5000 + "}",
            ErrorCode.INVALID_JSON,
            r"frame is not JSON: Exceeds the limit \(\d+ digits\) .*",
        ),
        ('["speak"]', ErrorCode.INVALID_MESSAGE, r"message must be a JSON object"),
    ],
    ids=["not-utf8", "not-json", "nested", "huge-int", "not-object"],
)
def test_a_frame_that_is_not_a_json_object_is_refused_in_words(
    decode: Callable[[str | bytes], object], frame: str | bytes, code: ErrorCode, message: str
) -> None:
    """Either decoder: the code and a sentence that says what is wrong with the frame."""
    with pytest.raises(ProtocolError) as caught:
        decode(frame)
    assert (caught.value.code, caught.value.id) == (code, None)
    assert re.fullmatch(message, caught.value.message), caught.value.message


def test_parse_object_names_what_it_read() -> None:
    with pytest.raises(ProtocolError) as caught:
        parse_object(b"\xff", "body")
    assert caught.value.message.startswith("body is not UTF-8: ")


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ({"type": "start"}, "server message lacks a valid 'id'"),
        ({"type": "end", "id": "s"}, "server message lacks a valid 'samples'"),
        (
            {"type": "end", "id": "s", "samples": 1.5, "synth_ms": 1},
            "server message lacks a valid 'samples'",
        ),
        (
            {"type": "end", "id": "s", "samples": -1, "synth_ms": 1},
            "server message's 'samples' is negative",
        ),
        (
            {"type": "end", "id": "s", "samples": 1, "synth_ms": 1e999},
            "server message's 'synth_ms' is not finite",
        ),
        ({"type": "marks", "id": "s", "words": ["Hi"]}, "a mark must be a JSON object"),
        (
            {"type": "marks", "id": "s", "words": [{"text": "Hi", "start_ms": 9, "end_ms": 2}]},
            "a mark needs 0 <= start_ms <= end_ms",
        ),
        (
            {
                "type": "marks",
                "id": "s",
                "words": [{"text": "a", "start_ms": 0, "end_ms": 1, "spoken": 5}],
            },
            "a mark's 'spoken' must be a string",
        ),
        ({"type": "bogus"}, "unknown server message type 'bogus'"),
        ({}, "unknown server message type None"),
    ],
    ids=[
        "no-id",
        "no-samples",
        "samples-float",
        "samples-negative",
        "synth-infinite",
        "mark-not-object",
        "mark-backwards",
        "spoken-not-string",
        "unknown-type",
        "no-type",
    ],
)
def test_a_malformed_server_frame_is_refused_in_words(
    frame: dict[str, object], message: str
) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_server(json.dumps(frame))
    assert (caught.value.code, caught.value.id, caught.value.message) == (
        ErrorCode.INVALID_MESSAGE,
        None,
        message,
    )


def test_an_error_frame_keeps_only_a_string_id_and_may_omit_its_message() -> None:
    assert decode_server('{"type": "error", "id": 42, "code": "busy"}') == Error(
        id=None, code=ErrorCode.BUSY, message=""
    )


def test_deeply_nested_json_is_a_typed_error_not_a_crash() -> None:
    assert _code("[" * 5000 + "]" * 5000) == (ErrorCode.INVALID_JSON, None)
    with pytest.raises(ProtocolError):
        decode_server("[" * 5000)


# --- word timings (marks) ----------------------------------------------------------------


def test_marks_are_asked_for_only_when_true_so_old_servers_see_the_same_speak() -> None:
    assert "marks" not in json.loads(encode(Speak(id="x", text="Hi.", marks=False)))
    assert json.loads(encode(Speak(id="x", text="Hi.", marks=True)))["marks"] is True
    assert decode_client('{"type":"speak","id":"x","text":"Hi."}') == Speak(id="x", text="Hi.")


@pytest.mark.parametrize("value", ["yes", 1, 0, [], {}])
def test_marks_must_be_a_boolean(value: object) -> None:
    frame = json.dumps({"type": "speak", "id": "x", "text": "Hi.", "marks": value})
    with pytest.raises(ProtocolError) as caught:
        decode_client(frame)
    assert (caught.value.code, caught.value.id) == (ErrorCode.INVALID_MESSAGE, "x")
    assert "'marks'" in caught.value.message


def test_marks_encode_as_the_documented_json() -> None:
    message = Marks(id="s1", words=(Word("Hi", 12.5, 300.0),))
    assert json.loads(encode(message)) == {
        "type": "marks",
        "id": "s1",
        "words": [{"text": "Hi", "start_ms": 12.5, "end_ms": 300.0}],
    }


def test_a_mark_says_what_was_spoken_only_where_it_differs_from_the_text() -> None:
    message = Marks(id="s1", words=(Word("$5", 0.0, 420.0, "five dollars"), Word("Hi", 1.0, 2.0)))
    assert json.loads(encode(message))["words"] == [
        {"text": "$5", "start_ms": 0.0, "end_ms": 420.0, "spoken": "five dollars"},
        {"text": "Hi", "start_ms": 1.0, "end_ms": 2.0},
    ]


def test_normalize_is_sent_only_when_false_and_must_be_a_boolean() -> None:
    assert "normalize" not in json.loads(encode(Speak(id="x", text="Hi.")))
    assert json.loads(encode(Speak(id="x", text="Hi.", normalize=False)))["normalize"] is False
    frame = json.dumps({"type": "speak", "id": "x", "text": "Hi.", "normalize": "no"})
    with pytest.raises(ProtocolError) as caught:
        decode_client(frame)
    assert (caught.value.code, caught.value.id) == (ErrorCode.INVALID_MESSAGE, "x")
    assert caught.value.message == "'normalize' must be true or false"


@pytest.mark.parametrize("reply", ["", 7, "r" * 129])
def test_reply_is_sent_only_when_named_and_must_be_a_short_string(reply: object) -> None:
    assert "reply" not in json.loads(encode(Speak(id="x", text="Hi.")))
    assert json.loads(encode(Speak(id="x", text="Hi.", reply="t1")))["reply"] == "t1"
    assert decode_client(encode(Speak(id="x", text="Hi.", reply="r" * 128))).reply == "r" * 128
    frame = json.dumps({"type": "speak", "id": "x", "text": "Hi.", "reply": reply})
    with pytest.raises(ProtocolError) as caught:
        decode_client(frame)
    assert (caught.value.code, caught.value.id) == (ErrorCode.INVALID_MESSAGE, "x")
    assert caught.value.message == "'reply' must be a non-empty string of <= 128 chars"


@pytest.mark.parametrize(
    "words",
    [
        "nope",
        [{"text": "Hi", "start_ms": 0, "end_ms": 1, "spoken": 5}],
        ["Hi"],
        [{"text": "Hi", "start_ms": 5}],
        [{"text": 3, "start_ms": 0, "end_ms": 1}],
        [{"text": "Hi", "start_ms": 9, "end_ms": 2}],
        [{"text": "Hi", "start_ms": -1, "end_ms": 2}],
        [{"text": "Hi", "start_ms": True, "end_ms": 2}],
        [{"text": "Hi", "start_ms": 0, "end_ms": 1e999}],
        [{"text": "Hi", "start_ms": 0, "end_ms": 10**400}],  # too big for a float: not a crash
    ],
)
def test_malformed_marks_are_refused(words: object) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_server(json.dumps({"type": "marks", "id": "s1", "words": words}))
    assert caught.value.code is ErrorCode.INVALID_MESSAGE


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"text": "hi"}, "'id'"),
        ({"id": "", "text": "hi"}, "'id'"),
        ({"id": "s", "text": 3}, "'text'"),
        ({"id": "s", "text": "  "}, "'text'"),
        ({"id": "s", "text": "x" * 2001}, "'text'"),
        ({"id": "s", "text": "hi", "voice": ""}, "'voice'"),
        ({"id": "s", "text": "hi", "speed": "fast"}, "'speed'"),
        ({"id": "s", "text": "hi", "speed": 9}, "'speed'"),
        ({"id": "s", "text": "hi", "marks": "yes"}, "'marks'"),
    ],
)
def test_every_refusal_says_which_field_in_words(fields: dict[str, object], named: str) -> None:
    """The message is for people: a non-empty sentence that names the field, as written."""
    with pytest.raises(ProtocolError) as caught:
        decode_client(json.dumps({"type": "speak", **fields}))
    assert isinstance(caught.value.message, str) and named in caught.value.message


def test_an_unknown_type_names_the_known_ones_and_only_a_string_id() -> None:
    for frame, id in (({"type": "bogus", "id": "s"}, "s"), ({"type": "bogus", "id": 42}, None)):
        with pytest.raises(ProtocolError) as caught:
            decode_client(json.dumps(frame))
        assert caught.value.id == id and "'speak'" in caught.value.message
    with pytest.raises(ProtocolError) as caught:
        decode_server(json.dumps({"type": "end", "id": "s", "samples": -1, "synth_ms": 1}))
    assert "'samples'" in caught.value.message


# the fields of a speak, in order
SPEAK_FIELDS = "type, id, text, voice, speed, marks, normalize, reply"


@pytest.mark.parametrize(
    ("frame", "field", "id"),
    [
        ({"type": "speak", "id": "s", "text": "hi", "sped": 1.5}, "'sped'", "s"),
        ({"type": "speak", "id": "s", "text": "hi", "Voice": "af_x"}, "'Voice'", "s"),
        ({"type": "cancel", "id": "s", "all": True}, "'all'", "s"),
        ({"type": "close", "now": True}, "'now'", None),
    ],
)
def test_an_unknown_field_is_refused_by_name(
    frame: dict[str, object], field: str, id: str | None
) -> None:
    """A typo is not dropped silently: invalid_message names it, the message, the known fields
    and the id, in the words docs/protocol.md quotes."""
    with pytest.raises(ProtocolError) as caught:
        decode_client(json.dumps(frame))
    error = caught.value
    assert (error.code, error.id) == (ErrorCode.INVALID_MESSAGE, id)
    known = {"speak": SPEAK_FIELDS, "cancel": "type, id", "close": "type"}[str(frame["type"])]
    assert error.message == (
        f"unrecognized field {field} in '{frame['type']}'; the fields are {known}"
    )
