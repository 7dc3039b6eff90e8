"""OpenAI's speech request without a server: the body's checks and the exact error shape."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from tts_protocol import ErrorCode
from tts_server.engines.base import Engine
from tts_server.engines.prepared import Prepared
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed
from tts_server.normalize import Options
from tts_server.openai_api.speech_request import (
    ApiError,
    NormalizationOptions,
    VoiceId,
    parse_speech,
    prepare_speech,
)
from tts_server.service import SynthesisRefused

GOOD = {"model": "tts-1", "input": "Hello.", "voice": "alloy"}


def refusal(body: dict[str, Any] | bytes) -> ApiError:
    with pytest.raises(ApiError) as caught:
        parse_speech(body if isinstance(body, bytes) else json.dumps(body).encode())
    return caught.value


def test_an_error_body_is_openais_four_fields_and_its_text_is_the_message() -> None:
    error = ApiError(400, "'input' is empty", param="input", code="empty_text")
    assert error.body() == {
        "error": {
            "message": "'input' is empty",
            "type": "invalid_request_error",
            "param": "input",
            "code": "empty_text",
        }
    }
    assert str(error) == "'input' is empty"
    response = error.response()
    assert response.status_code == 400 and "retry-after" not in response.headers
    assert json.loads(bytes(response.body)) == error.body()


@pytest.mark.parametrize(
    ("status", "code", "openai_code"),
    [(429, ErrorCode.BUSY, "busy"), (503, ErrorCode.SHUTTING_DOWN, "service_unavailable")],
)
def test_the_servers_refusals_keep_their_status_and_words_and_say_when_to_retry(
    status: int, code: ErrorCode, openai_code: str
) -> None:
    error = ApiError.refused(SynthesisRefused(status, code, "16 sessions are open"))
    assert error.body()["error"] == {
        "message": "16 sessions are open",
        "type": "server_error",
        "param": None,
        "code": openai_code,
    }
    response = error.response()
    assert response.status_code == status and response.headers["retry-after"] == "1"


def test_a_body_that_is_not_json_says_so_with_the_parsers_reason() -> None:
    error = refusal(b'{"model": ')
    assert (error.status, error.code, error.param) == (400, "invalid_json", None)
    assert error.message.startswith("the body is not valid JSON: ") and "EOF" in error.message


def test_a_missing_parameter_is_named() -> None:
    error = refusal({"model": "tts-1", "voice": "alloy"})
    assert (error.status, error.code, error.param, error.kind) == (
        400,
        "missing_required_parameter",
        "input",
        "invalid_request_error",
    )
    assert error.message == "missing required parameter 'input'"


def test_an_unknown_parameter_is_named_with_its_path_inside_the_body() -> None:
    error = refusal({**GOOD, "sped": 1.5})
    assert (error.status, error.code, error.param) == (400, "unknown_parameter", "sped")
    assert error.message == "unrecognized request argument 'sped'"
    nested = refusal({**GOOD, "normalization_options": {"urls": False}})
    assert nested.param == "normalization_options.urls"
    assert nested.message == "unrecognized request argument 'normalization_options.urls'"


def test_a_bad_value_says_which_and_why() -> None:
    error = refusal({**GOOD, "speed": "fast"})
    assert (error.status, error.code, error.param) == (400, "invalid_value", "speed")
    assert error.message.startswith("invalid value for 'speed': ")


# --- what Kokoro adds to OpenAI's schema (literal limits) ---------------------------------


@pytest.mark.parametrize(
    ("fields", "status", "param", "code", "message"),
    [
        (
            {"model": "tts-2"},
            404,
            "model",
            "model_not_found",
            "the model 'tts-2' does not exist; use one of kokoro, tts-1, tts-1-hd, "
            "gpt-4o-mini-tts, gpt-4o-mini-tts-2025-12-15",
        ),
        ({"input": " \n "}, 400, "input", "empty_text", "'input' is empty"),
        (
            {"input": "a" * 4097},
            400,
            "input",
            "string_above_max_length",
            "'input' has 4097 characters; the limit is 4096",
        ),
        (
            {"speed": 0.3},
            400,
            "speed",
            "unsupported_value",
            "speed 0.3 is within OpenAI's range but Kokoro speaks only 0.5 to 2",
        ),
        (
            {"speed": 2.5},
            400,
            "speed",
            "unsupported_value",
            "speed 2.5 is within OpenAI's range but Kokoro speaks only 0.5 to 2",
        ),
    ],
)
def test_kokoros_own_checks_name_the_parameter_and_the_limit(
    fields: dict[str, Any], status: int, param: str, code: str, message: str
) -> None:
    error = refusal({**GOOD, **fields})
    assert (error.status, error.param, error.code, error.message) == (status, param, code, message)
    assert error.kind == "invalid_request_error"


def test_text_the_english_g2p_cannot_speak_is_422() -> None:
    with pytest.raises(ApiError) as caught:
        prepared(Voices(), {**GOOD, "input": "東京 is big."})
    error = caught.value
    assert (error.status, error.param, error.code) == (422, "input", "unsupported_text")
    assert "東京" in error.message


@pytest.mark.parametrize("speed", [0.25, 0.2499])
def test_openais_lowest_speeds_are_told_apart_from_kokoros(speed: float) -> None:
    error = refusal({**GOOD, "speed": speed})
    assert error.code == ("unsupported_value" if speed == 0.25 else "invalid_value")


def test_the_limits_themselves_are_accepted() -> None:
    for fields in ({"input": "a" * 4096}, {"speed": 0.5}, {"speed": 2.0}, {"model": "kokoro"}):
        speech = parse_speech(json.dumps({**GOOD, **fields}).encode())
        assert (speech.input, speech.speed) == (
            fields.get("input", "Hello."),
            fields.get("speed", 1.0),
        )


# --- voices --------------------------------------------------------------------------------


class Voices(Engine):
    """An engine with voice tables and no model."""

    name = "voices"
    preferred_voice = "af_heart"

    def __init__(self) -> None:
        super().__init__(g2p=str.strip)  # type: ignore[arg-type]
        self._voices = {
            name: np.full((510, 1, 256), float(n), np.float32)
            for n, name in enumerate(("af_heart", "af_alloy", "am_adam"), 1)
        }

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        raise AssertionError("no synthesis here")


def prepared(engine: Engine, body: dict[str, Any]) -> Prepared:
    return prepare_speech(engine, parse_speech(json.dumps(body).encode()))


def voice(engine: Engine, name: str | dict[str, str]) -> str:
    """The name of the voice ``engine`` prepares for the request's ``voice``."""
    return prepared(engine, {**GOOD, "voice": name}).voice_name


def test_a_voice_resolves_by_engine_name_then_openai_name_then_as_a_blend() -> None:
    engine = Voices()
    assert voice(engine, "am_adam") == "am_adam"
    assert voice(engine, "alloy") == "af_alloy"  # OpenAI's name of a pack it has
    assert voice(engine, "onyx") == "am_adam"  # the nearest male voice
    assert voice(engine, VoiceId(id="nova").model_dump()) == "af_heart"
    assert voice(engine, "af_heart(2)+am_adam(1)") == "af_heart(0.6667)+am_adam(0.3333)"


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("af_nobody", "unknown voice 'af_nobody'; available: af_alloy, af_heart, am_adam"),
        ("af_heart(0)+am_adam", "'0'"),
    ],
)
def test_a_voice_it_cannot_resolve_is_a_400_naming_it(name: str, says: str) -> None:
    with pytest.raises(ApiError) as caught:
        voice(Voices(), name)
    error = caught.value
    assert (error.status, error.param, error.code) == (400, "voice", "unknown_voice")
    assert says in error.message


def test_normalization_options_switch_each_reading_and_off_is_none() -> None:
    assert NormalizationOptions().options() == Options()
    assert NormalizationOptions(normalize=False).options() is None
    switches = {
        "url_normalization": "urls",
        "email_normalization": "emails",
        "phone_normalization": "phones",
        "unit_normalization": "units",
        "replace_remaining_symbols": "symbols",
        "optional_pluralization_normalization": "plurals",
    }
    for field, option in switches.items():
        options = NormalizationOptions(**{field: False}).options()
        assert options == Options(**{option: False}), field


def test_the_prepared_request_carries_its_text_speed_and_readings() -> None:
    body = {**GOOD, "input": "Pay $5.", "speed": 1.5}
    plain = prepared(Voices(), body)
    assert (plain.text, plain.speed, plain.normalization) == ("Pay $5.", 1.5, Options())
    unread = prepared(Voices(), {**body, "normalization_options": {"normalize": False}})
    assert unread.normalization is None and unread.speed == 1.5
    no_urls = prepared(Voices(), {**body, "normalization_options": {"url_normalization": False}})
    assert no_urls.normalization == NormalizationOptions(url_normalization=False).options()
