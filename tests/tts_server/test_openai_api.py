"""The OpenAI speech API through the official ``openai`` client, on real servers on loopback.

The real Kokoro ONNX engine speaks every format; a tone engine (no model: each sentence is a
tone whose pitch is the voice's style value) proves the order of streaming, the blend mix on
every route, and the failure paths, where the model itself does not matter.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import sys
import threading
import time
from collections.abc import Iterator, Sequence

import av
import httpx
import numpy as np
import openai
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from websockets.sync.client import connect

from tests.conftest import start_server
from tts_protocol import SAMPLE_RATE, End, Ready, Speak, decode_server, encode, parse_voice
from tts_protocol.validation import VoiceMix
from tts_protocol.voices import OPENAI_VOICES
from tts_server.app import create_app
from tts_server.engines import Engine, EngineError
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed
from tts_server.openai_api.audio_encoding import ENCODINGS, AudioFormat
from tts_server.openai_api.routes import create_router
from tts_server.openai_api.speech_request import MODELS
from tts_server.settings import Settings
from tts_server.testing.server_thread import ServerThread

BadRequest = openai.BadRequestError
FORMATS = [f.value for f in AudioFormat]
TWO_SENTENCES = "The quick brown fox jumps over the lazy dog. Then it runs far away into the woods."
TONE_SECONDS = 0.6
BASE_HZ = 200.0


class ToneEngine(Engine):
    """No model: a sentence is a tone at ``BASE_HZ`` times the voice's style value.

    A sentence with "gated" waits (on the engine thread) until the test opens ``gate``; one
    with "explode" fails; one without letters is silence. ``log`` records what happened when.
    """

    name = "tone"
    preferred_voice = "af_alloy"

    def __init__(self) -> None:
        super().__init__(g2p=str.strip)  # type: ignore[arg-type]  # phonemes = the text
        self._voices = {
            "af_alloy": np.full((510, 1, 256), 1.0, np.float32),
            "am_onyx": np.full((510, 1, 256), 3.0, np.float32),
        }
        self.gate = threading.Event()
        self.log: list[str] = []

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        return [Timed(self._tone(piece.phonemes, piece.voice)) for piece in pieces]

    def _tone(self, phonemes: str, voice: VoiceMix) -> np.ndarray:
        if "gated" in phonemes:
            opened = self.gate.wait(timeout=20)
            self.log.append("gated sentence synthesized" if opened else "gate timed out")
        if "explode" in phonemes:
            raise RuntimeError("the model blew up")
        if not any(char.isalpha() for char in phonemes):
            return np.zeros(SAMPLE_RATE // 2, np.float32)
        hz = BASE_HZ * float(self.style_table(voice).flat[0])
        t = np.arange(int(TONE_SECONDS * SAMPLE_RATE)) / SAMPLE_RATE
        return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def client_for(server: ServerThread) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.http_url}/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def tone_engine() -> ToneEngine:
    return ToneEngine()


@pytest.fixture(scope="module")
def tone_server(tone_engine: ToneEngine) -> Iterator[ServerThread]:
    server = start_server(tone_engine)
    yield server
    server.stop()


@pytest.fixture
def tones(tone_engine: ToneEngine, tone_server: ServerThread) -> openai.OpenAI:
    tone_engine.gate.clear()
    tone_engine.log.clear()
    return client_for(tone_server)


@pytest.fixture(scope="module")
def kokoro(tts_server: ServerThread) -> openai.OpenAI:
    return client_for(tts_server)


def http_error(client: openai.OpenAI, name: str) -> type[Exception]:
    """The exception ``name`` of the HTTP library the client streams through.

    openai 2 streams through ``httpx``, openai 3 through ``httpx2``; a cut body raises that
    library's own error, unwrapped.
    """
    http_client = next(c for c in type(client._client).__mro__ if c.__module__.startswith("httpx"))
    library = sys.modules[http_client.__module__.partition(".")[0]]
    error: type[Exception] = getattr(library, name)
    return error


def decode(data: bytes, response_format: str) -> tuple[np.ndarray, int]:
    """Float mono samples and their rate, through PyAV (``pcm`` is read as s16le 24 kHz)."""
    if response_format == "pcm":
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768, SAMPLE_RATE
    with av.open(io.BytesIO(data)) as container:
        rate = container.streams.audio[0].rate
        frames = [f.to_ndarray().astype(np.float32).reshape(-1) for f in container.decode(audio=0)]
    samples = np.concatenate(frames) if frames else np.zeros(0, np.float32)
    if np.abs(samples).max(initial=0) > 1.5:  # integer sample formats: scale to [-1, 1]
        samples = samples / 32768
    return samples, rate


def peak_hz(samples: np.ndarray, rate: int) -> float:
    return float(np.fft.rfftfreq(samples.size, 1 / rate)[np.argmax(np.abs(np.fft.rfft(samples)))])


def speak(client: openai.OpenAI, text: str, **params: object) -> tuple[bytes, httpx.Headers]:
    params = {"model": "kokoro", "voice": "af_alloy", "response_format": "pcm", **params}
    with client.audio.speech.with_streaming_response.create(input=text, **params) as response:  # type: ignore[arg-type]
        return response.read(), response.headers


# The real model, every format.


@pytest.fixture(scope="module")
def reference_seconds(kokoro: openai.OpenAI) -> float:
    pcm, _ = speak(kokoro, TWO_SENTENCES, voice="jf_alpha")
    return len(pcm) / 2 / SAMPLE_RATE


@pytest.mark.slow
@pytest.mark.parametrize("response_format", FORMATS)
def test_every_format_streams_and_decodes_to_speech_of_plausible_length(
    kokoro: openai.OpenAI, reference_seconds: float, response_format: str
) -> None:
    with kokoro.audio.speech.with_streaming_response.create(
        model="tts-1", voice="jf_alpha", input=TWO_SENTENCES, response_format=response_format
    ) as response:
        media_type = response.headers["content-type"]
        chunked = response.headers.get("transfer-encoding") == "chunked"
        data = b"".join(response.iter_bytes())
    samples, rate = decode(data, response_format)
    assert media_type == ENCODINGS[AudioFormat(response_format)].media_type and chunked
    assert rate == (48_000 if response_format == "opus" else SAMPLE_RATE)
    assert 2.0 < reference_seconds < 15.0  # two sentences of speech
    assert samples.size / rate == pytest.approx(reference_seconds, abs=0.15)
    assert np.sqrt(np.mean(samples**2)) > 0.03


@pytest.mark.slow
def test_the_real_model_speaks_a_blend_and_names_it_canonically(kokoro: openai.OpenAI) -> None:
    pcm, headers = speak(kokoro, "A blended voice.", voice="jm_kumo(1)+jf_alpha(3)")
    assert headers["x-voice"] == "jf_alpha(0.75)+jm_kumo(0.25)"
    assert len(pcm) / 2 / SAMPLE_RATE > 0.5


# Streaming order and decoding while the response arrives.


@pytest.mark.parametrize("response_format", FORMATS)
def test_audio_decodes_before_the_last_sentence_is_synthesized(
    tones: openai.OpenAI, tone_engine: ToneEngine, response_format: str
) -> None:
    with tones.audio.speech.with_streaming_response.create(
        model="kokoro",
        voice="af_alloy",
        input="One. The gated one.",
        response_format=response_format,
    ) as response:
        received, chunks = b"", response.iter_bytes()
        for chunk in chunks:
            received += chunk
            try:
                samples, rate = decode(received, response_format)
            except av.error.FFmpegError:  # not yet a whole header
                continue
            if samples.size / rate >= TONE_SECONDS / 2:
                break
        tone_engine.log.append("client decoded audio")
        tone_engine.gate.set()
        received += b"".join(chunks)
    assert tone_engine.log == ["client decoded audio", "gated sentence synthesized"]
    samples, rate = decode(received, response_format)
    assert samples.size / rate == pytest.approx(2 * TONE_SECONDS, abs=0.15)


def test_sse_carries_base64_audio_deltas_then_done(tones: openai.OpenAI) -> None:
    with tones.audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts",
        voice="af_alloy",
        input="One. Two. Three.",
        response_format="pcm",
        stream_format="sse",
        instructions="Speak cheerfully.",  # accepted and ignored
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [json.loads(line[6:]) for line in response.iter_lines() if line]
    assert [e["type"] for e in events[-1:]] == ["speech.audio.done"]
    assert {e["type"] for e in events[:-1]} == {"speech.audio.delta"}
    pcm = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert len(pcm) / 2 / SAMPLE_RATE == pytest.approx(3 * TONE_SECONDS, abs=0.05)


def test_a_failure_mid_stream_cuts_the_response_short(tones: openai.OpenAI) -> None:
    with tones.audio.speech.with_streaming_response.create(
        model="kokoro", voice="af_alloy", input="Fine. Then explode.", response_format="wav"
    ) as response:
        assert response.status_code == 200
        with pytest.raises(http_error(tones, "RemoteProtocolError")):
            b"".join(response.iter_bytes())


def test_a_failure_mid_stream_is_an_error_event_in_sse(
    tones: openai.OpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.ERROR, logger="tts_server.openai_api"),
        tones.audio.speech.with_streaming_response.create(
            model="kokoro", voice="af_alloy", input="Fine. Then explode.", stream_format="sse"
        ) as response,
    ):
        events = [json.loads(line[6:]) for line in response.iter_lines() if line]
    assert [e["type"] for e in events] == ["speech.audio.delta", "error"]
    assert events[-1]["error"] == {
        "message": "RuntimeError('the model blew up')",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    logged = [r for r in caplog.records if r.name == "tts_server.openai_api"]
    assert [r.getMessage() for r in logged] == ["speech synthesis failed mid-stream"]
    assert logged[0].exc_info is not None  # with its traceback


# Voices: OpenAI's names, blends on every route.


def test_openai_voice_names_map_to_the_engine_voice_of_that_name_else_the_default(
    tones: openai.OpenAI,
) -> None:
    for voice, hz in [("onyx", 3 * BASE_HZ), ("alloy", BASE_HZ), ("shimmer", BASE_HZ)]:
        pcm, headers = speak(tones, "Hello.", voice=voice)
        assert peak_hz(*decode(pcm, "pcm")) == pytest.approx(hz, abs=3)
    assert headers["x-voice"] == "af_alloy"


def test_a_custom_voice_object_names_a_voice_or_blend(tones: openai.OpenAI) -> None:
    pcm, headers = speak(tones, "Hello.", voice={"id": "am_onyx"})
    assert headers["x-voice"] == "am_onyx"
    assert peak_hz(*decode(pcm, "pcm")) == pytest.approx(3 * BASE_HZ, abs=3)


BLEND, BLEND_HZ = "am_onyx+af_alloy", 2 * BASE_HZ  # style: 0.5 * 1.0 + 0.5 * 3.0


def test_a_blend_mixes_the_style_tables_in_the_speech_route(tones: openai.OpenAI) -> None:
    pcm, headers = speak(tones, "Blended.", voice=BLEND)
    assert headers["x-voice"] == "af_alloy(0.5)+am_onyx(0.5)"
    assert peak_hz(*decode(pcm, "pcm")) == pytest.approx(BLEND_HZ, abs=3)
    weighted, _ = speak(tones, "Weighted.", voice="af_alloy(0.75)+am_onyx(0.25)")
    assert peak_hz(*decode(weighted, "pcm")) == pytest.approx(1.5 * BASE_HZ, abs=3)


def test_a_blend_mixes_the_style_tables_on_the_websocket(tone_server: ServerThread) -> None:
    with connect(tone_server.ws_url) as socket:
        assert isinstance(decode_server(socket.recv()), Ready)
        socket.send(encode(Speak(id="b", text="Blended.", voice=parse_voice(BLEND))))
        pcm = b""
        while not isinstance(frame := socket.recv(), str) or not isinstance(
            decode_server(frame), End
        ):
            pcm += frame if isinstance(frame, bytes) else b""
    assert peak_hz(*decode(pcm, "pcm")) == pytest.approx(BLEND_HZ, abs=3)


def test_a_blend_mixes_the_style_tables_in_invocations(tone_server: ServerThread) -> None:
    body = {"text": "Blended.", "voice": BLEND, "format": "pcm"}
    response = httpx.post(f"{tone_server.http_url}/invocations", json=body, timeout=30)
    assert response.status_code == 200
    assert peak_hz(*decode(response.content, "pcm")) == pytest.approx(BLEND_HZ, abs=3)


def test_voices_lists_the_engine_voices_and_the_openai_names(tone_server: ServerThread) -> None:
    listing = httpx.get(f"{tone_server.http_url}/v1/audio/voices").json()
    assert listing["voices"] == ["af_alloy", "am_onyx"]
    assert listing["default_voice"] == "af_alloy"
    assert set(listing["openai_voices"]) == set(OPENAI_VOICES)
    assert listing["openai_voices"]["onyx"] == "am_onyx"
    assert listing["openai_voices"]["coral"] == "af_alloy"
    assert listing["openai_voices"]["ash"] == "am_onyx"  # the male voice, not the default


def test_models_lists_and_retrieves_the_accepted_names(tones: openai.OpenAI) -> None:
    assert [m.id for m in tones.models.list()] == list(MODELS)
    assert tones.models.retrieve("tts-1-hd").id == "tts-1-hd"
    with pytest.raises(openai.NotFoundError) as caught:
        tones.models.retrieve("whisper-1")
    assert caught.value.code == "model_not_found"


def test_a_model_card_is_openais_shape_stamped_with_the_routers_creation() -> None:
    before = int(time.time())
    app = FastAPI()
    app.include_router(create_router())  # the models routes need no engine
    with TestClient(app) as client:
        listed = client.get("/v1/models").json()
        one = client.get("/v1/models/kokoro").json()
    assert listed["object"] == "list" and len(listed["data"]) == len(MODELS)
    assert one == listed["data"][0]
    created = one.pop("created")
    assert one == {"id": "kokoro", "object": "model", "owned_by": "kokoro"}
    assert isinstance(created, int) and before <= created <= time.time()


# Errors in OpenAI's shape, through the client's exceptions.


@pytest.mark.parametrize(
    ("params", "error", "param", "code", "says"),
    [
        ({"model": "tts-2"}, openai.NotFoundError, "model", "model_not_found", "'tts-2'"),
        ({"voice": "af_nobody"}, BadRequest, "voice", "unknown_voice", "af_nobody"),
        ({"voice": "af_alloy+xx"}, BadRequest, "voice", "unknown_voice", "'xx'"),
        ({"voice": "af_alloy(0)+am_onyx"}, BadRequest, "voice", "unknown_voice", "'0'"),
        ({"speed": 3.0}, BadRequest, "speed", "unsupported_value", "0.5 to 2"),
        ({"speed": 0.25}, BadRequest, "speed", "unsupported_value", "0.5 to 2"),
        ({"speed": 0.4}, BadRequest, "speed", "unsupported_value", "0.5 to 2"),
        ({"speed": 0.2}, BadRequest, "speed", "invalid_value", "0.25"),
        ({"speed": 4.5}, BadRequest, "speed", "invalid_value", "4"),
        (
            {"response_format": "ogg"},
            openai.BadRequestError,
            "response_format",
            "invalid_value",
            "'mp3'",
        ),
        (
            {"stream_format": "ws"},
            openai.BadRequestError,
            "stream_format",
            "invalid_value",
            "'sse'",
        ),
        ({"input": "x" * 4097}, BadRequest, "input", "string_above_max_length", "4096"),
        ({"input": "  "}, BadRequest, "input", "empty_text", "empty"),
        ({"input": "... !!!"}, BadRequest, "input", "empty_text", "nothing to speak"),
        (
            {"input": "東京 is big."},
            openai.UnprocessableEntityError,
            "input",
            "unsupported_text",
            "CJK letters (東京)",
        ),
        (
            {"extra_body": {"lang": "en"}},
            openai.BadRequestError,
            "lang",
            "unknown_parameter",
            "lang",
        ),
    ],
)
def test_bad_requests_are_openai_errors_naming_the_parameter(
    tones: openai.OpenAI,
    params: dict[str, object],
    error: type[openai.APIStatusError],
    param: str,
    code: str,
    says: str,
) -> None:
    request: dict[str, object] = {"input": "Hello.", **params}
    text = str(request.pop("input"))
    with pytest.raises(error) as caught:
        speak(tones, text, **request)
    assert (caught.value.param, caught.value.code, caught.value.type) == (
        param,
        code,
        "invalid_request_error",
    )
    assert says in caught.value.message


def test_input_with_nothing_to_speak_is_refused_in_these_exact_words(
    tone_server: ServerThread,
) -> None:
    # Refused after G2P, by the route (no sentence had a sound), not by the body's checks.
    body = {"model": "tts-1", "input": "... !!!", "voice": "alloy"}
    response = httpx.post(f"{tone_server.http_url}/v1/audio/speech", json=body, timeout=30)
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "'input' has nothing to speak",
            "type": "invalid_request_error",
            "param": "input",
            "code": "empty_text",
        }
    }


def test_kokoros_speed_range_is_spoken_at_both_ends(tones: openai.OpenAI) -> None:
    for speed in (0.5, 2.0):
        pcm, _ = speak(tones, "Hello.", speed=speed)
        assert pcm


def sessions_open(server: ServerThread) -> int:
    return int(httpx.get(f"{server.http_url}/ping").json()["sessions"])


def test_failed_requests_give_their_session_slot_back(
    tones: openai.OpenAI, tone_server: ServerThread
) -> None:
    """More failed requests than the server admits sessions (16), then one that must succeed:
    every failure path (a bad parameter, nothing to speak, a failing model) frees its slot."""
    before = sessions_open(tone_server)
    failures = [
        ({"voice": "af_nobody"}, BadRequest),
        ({"speed": 0.3}, BadRequest),
        ({"input": "... !!!"}, BadRequest),
        ({"input": "It will explode."}, openai.InternalServerError),
    ]
    for n in range(17):
        params, error = failures[n % len(failures)]
        request: dict[str, object] = {"input": "Hello.", **params}
        with pytest.raises(error):
            speak(tones, str(request.pop("input")), **request)
    pcm, _ = speak(tones, "Still serving.")
    assert pcm
    deadline = time.monotonic() + 10
    while (now := sessions_open(tone_server)) != before:  # a streamed body frees it as it ends
        assert time.monotonic() < deadline, f"{now} sessions open, {before} before the requests"
        time.sleep(0.02)


def test_a_server_with_every_session_synthesizing_answers_429_busy(
    tone_engine: ToneEngine,
) -> None:
    server = start_server(tone_engine, max_sessions=1)
    tone_engine.gate.clear()
    held = threading.Thread(target=speak, args=(client_for(server), "The gated one."))
    try:
        held.start()  # one request holds the only session, waiting on the gate
        deadline = time.monotonic() + 10
        while sessions_open(server) != 1:
            assert time.monotonic() < deadline, "the first request never took its session"
            time.sleep(0.02)
        body = {"model": "tts-1", "input": "Hello.", "voice": "alloy"}
        response = httpx.post(f"{server.http_url}/v1/audio/speech", json=body, timeout=30)
    finally:
        tone_engine.gate.set()
        held.join(timeout=30)
        server.stop()
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"
    assert response.json() == {
        "error": {
            "message": "1 sessions are synthesizing; try again later",
            "type": "server_error",
            "param": None,
            "code": "busy",
        }
    }


def test_a_failure_in_the_first_sentence_is_a_500_server_error(
    tones: openai.OpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.ERROR, logger="tts_server.openai_api"),
        pytest.raises(openai.InternalServerError) as caught,
    ):
        speak(tones, "It will explode.")
    assert caught.value.status_code == 500
    assert caught.value.body == {
        "message": "synthesis failed: RuntimeError('the model blew up')",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    logged = [r for r in caplog.records if r.name == "tts_server.openai_api"]
    assert [r.getMessage() for r in logged] == ["speech synthesis failed"]
    assert logged[0].exc_info is not None  # with its traceback


def test_bodies_over_the_limit_are_413_before_they_are_read(tone_server: ServerThread) -> None:
    response = httpx.post(
        f"{tone_server.http_url}/v1/audio/speech",
        content=b"{" + b" " * (64 * 1024) + b"}",  # the documented 64 KiB limit
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json() == {
        "error": {
            "message": "the body exceeds 65536 bytes",
            "type": "invalid_request_error",
            "param": None,
            "code": "request_too_large",
        }
    }


def test_a_body_that_is_not_json_is_a_400(tone_server: ServerThread) -> None:
    response = httpx.post(f"{tone_server.http_url}/v1/audio/speech", content=b"model=tts-1")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"


def test_a_server_without_an_engine_answers_503_with_retry_after() -> None:
    def no_engine(_settings: Settings) -> Engine:
        raise EngineError("no weights here")

    server = ServerThread(create_app(Settings(), loader=no_engine)).start()
    try:
        client = client_for(server)
        with pytest.raises(openai.InternalServerError) as caught:
            speak(client, "Hello.")
        assert caught.value.status_code == 503 and caught.value.code == "service_unavailable"
        assert caught.value.response.headers["retry-after"] == "1"
        voices = httpx.get(f"{server.http_url}/v1/audio/voices")
        assert voices.status_code == 503 and voices.json()["error"]["type"] == "server_error"
        assert [m.id for m in client.models.list()] == list(MODELS)  # no engine needed
    finally:
        server.stop()


def test_captioned_speech_names_its_voice_rate_and_audio_type_and_refuses_sse(
    tone_server: ServerThread,
) -> None:
    url = f"{tone_server.http_url}/v1/audio/speech/captioned"
    body = {"model": "kokoro", "voice": "alloy", "input": "Hello."}
    response = httpx.post(url, json=body, timeout=60)
    assert response.status_code == 200
    headers = response.headers
    assert (headers["x-voice"], headers["x-sample-rate"], headers["x-audio-type"]) == (
        "af_alloy",
        "24000",
        "audio/mpeg",
    )
    refused = httpx.post(url, json={**body, "stream_format": "sse"}, timeout=60)
    assert refused.status_code == 400
    assert refused.json()["error"] == {
        "message": "captioned speech streams NDJSON; 'stream_format' must be 'audio'",
        "type": "invalid_request_error",
        "param": "stream_format",
        "code": "unsupported_value",
    }


def test_audio_and_sse_responses_name_their_voice_and_rate(tone_server: ServerThread) -> None:
    url = f"{tone_server.http_url}/v1/audio/speech"
    body = {"model": "kokoro", "voice": "alloy", "input": "Hello.", "response_format": "wav"}
    for stream_format in ("audio", "sse"):
        response = httpx.post(url, json={**body, "stream_format": stream_format}, timeout=60)
        assert response.status_code == 200, stream_format
        assert (response.headers["x-voice"], response.headers["x-sample-rate"]) == (
            "af_alloy",
            "24000",
        )


def test_a_failure_mid_caption_is_a_last_line_in_openais_shape(
    tone_server: ServerThread, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"{tone_server.http_url}/v1/audio/speech/captioned"
    body = {"model": "kokoro", "voice": "alloy", "input": "Fine. Then explode."}
    with caplog.at_level(logging.ERROR, logger="tts_server.openai_api"):
        response = httpx.post(url, json=body, timeout=60)
    lines = response.text.split("\n")
    assert lines[-1] == "" and response.status_code == 200
    assert json.loads(lines[-2]) == {
        "error": {
            "message": "RuntimeError('the model blew up')",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }
    assert "audio" in json.loads(lines[0])
    logged = [r.getMessage() for r in caplog.records if r.name == "tts_server.openai_api"]
    assert logged == ["captioned speech failed mid-stream"]
