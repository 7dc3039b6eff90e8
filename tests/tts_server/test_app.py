"""The server through real sockets: WebSocket protocol invariants, /invocations and /ping."""

from __future__ import annotations

import asyncio
import io
import json
import re
import socket
import wave
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import httpx
import numpy as np
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.conftest import wait_healthy
from tts_protocol import (
    Cancelled,
    End,
    Error,
    ErrorCode,
    Ready,
    ServerMessage,
    Speak,
    Start,
    decode_server,
    encode,
)
from tts_server.app import create_app
from tts_server.engines import Engine, EngineError
from tts_server.engines.base import Started, WindowJob
from tts_server.engines.g2p import split_spans
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed
from tts_server.engines.windows import SAMPLES_PER_FRAME
from tts_server.testing.server_thread import ServerThread

Event = ServerMessage | bytes
LONG_TEXT = " ".join(
    f"Paragraph {n} talks at length about rivers, mountains and the weather." for n in range(12)
)


@pytest.fixture
async def ws(tts_server: ServerThread) -> AsyncIterator[ClientConnection]:
    async with connect(tts_server.ws_url, max_size=1 << 20) as socket:
        ready = decode_server(await socket.recv())
        assert isinstance(ready, Ready)
        yield socket


async def next_event(socket: ClientConnection, limit_s: float = 30.0) -> Event:
    frame = await asyncio.wait_for(socket.recv(), limit_s)
    return frame if isinstance(frame, bytes) else decode_server(frame)


async def until_terminal(socket: ClientConnection, ids: set[str]) -> list[Event]:
    """Read events until every id in ``ids`` got a terminal reply."""
    events: list[Event] = []
    pending = set(ids)
    try:
        async with asyncio.timeout(120):  # each segment is a sentence or two of speech
            while pending:
                event = await next_event(socket)
                events.append(event)
                if isinstance(event, End | Cancelled | Error) and event.id in pending:
                    pending.discard(event.id)
    except TimeoutError:
        pytest.fail(f"no terminal reply for {sorted(pending)} within 120 s")
    return events


def speak(segment: str, text: str = "Hello there.", **fields: object) -> str:
    return encode(Speak(id=segment, text=text, **fields))  # type: ignore[arg-type]


def audio_of(events: list[Event]) -> bytes:
    return b"".join(e for e in events if isinstance(e, bytes))


async def test_ready_frame_describes_format_and_voices(tts_server: ServerThread) -> None:
    async with connect(tts_server.ws_url) as socket:
        ready = decode_server(await socket.recv())
    assert ready == Ready(voices=tuple(sorted(ready.voices)), default_voice="jf_alpha")  # type: ignore[union-attr]


@pytest.mark.parametrize("binary", [True, False], ids=["binary-frame", "text-frame"])
async def test_speak_in_binary_and_text_frames_yields_start_audio_end(
    ws: ClientConnection, binary: bool
) -> None:
    message = speak("s1", "Binary frames are how SageMaker delivers messages.")
    await ws.send(message.encode() if binary else message)
    events = await until_terminal(ws, {"s1"})
    assert events[0] == Start(id="s1")
    end = events[-1]
    assert isinstance(end, End) and end.id == "s1" and end.synth_ms > 0
    pcm = audio_of(events)
    assert len(pcm) == 2 * end.samples > 24000 * 2  # over a second of speech
    assert all(len(e) <= 32 * 1024 for e in events if isinstance(e, bytes))
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768
    assert np.sqrt(np.mean(samples**2)) > 0.03


async def test_cancel_mid_segment_stops_its_audio_and_the_next_segment_runs(
    ws: ClientConnection,
) -> None:
    await ws.send(speak("long", LONG_TEXT).encode())
    await ws.send(speak("next", "And now something short.").encode())
    assert await next_event(ws) == Start(id="long")
    assert isinstance(await next_event(ws), bytes)  # first chunk is out: we are mid-segment
    await ws.send(encode_cancel("long"))
    events = await until_terminal(ws, {"long", "next"})
    cancelled_at = events.index(Cancelled(id="long"))
    assert Start(id="next") in events[cancelled_at:]
    assert not any(
        isinstance(e, bytes) for e in events[cancelled_at : events.index(Start(id="next"))]
    )
    assert isinstance(events[-1], End) and events[-1].id == "next"


def encode_cancel(segment: str | None = None) -> bytes:
    payload = {"type": "cancel"} if segment is None else {"type": "cancel", "id": segment}
    return json.dumps(payload).encode()


async def test_close_finishes_the_queue_then_closes_normally(ws: ClientConnection) -> None:
    await ws.send(speak("c1"))
    await ws.send(speak("c2"))
    await ws.send(b'{"type": "close"}')
    events = await until_terminal(ws, {"c1", "c2"})
    assert [e.id for e in events if isinstance(e, End)] == ["c1", "c2"]
    with pytest.raises(ConnectionClosed) as closed:
        await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000


class CountingEngine(Engine):
    """Wraps the real engine (whole or in windows, as it decodes) and counts the pieces it
    starts."""

    name = "counting"
    streams = True  # as the engine it wraps, when that one decodes in windows

    def __init__(self, inner: Engine) -> None:
        super().__init__(inner._g2p, windows=inner.window_plan)
        self.inner = inner
        self.preferred_voice = inner.default_voice
        self._voices = dict.fromkeys(inner.voices)
        self.chunks = 0

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        self.chunks += len(pieces)
        return self.inner._infer_batch(lane, pieces)

    def _start_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Started]:
        self.chunks += len(pieces)
        return self.inner._start_batch(lane, pieces)

    def _window_batch(self, lane: int, jobs: Sequence[WindowJob]) -> list[np.ndarray]:
        return self.inner._window_batch(lane, jobs)


async def test_disconnect_mid_segment_stops_synthesis(engine: Engine) -> None:
    counting = CountingEngine(engine)
    server = ServerThread(create_app(loader=lambda _settings: counting)).start()
    try:
        wait_healthy(server.http_url)
        before = counting.chunks
        async with connect(server.ws_url) as socket:
            await socket.recv()
            await socket.send(speak("gone", LONG_TEXT * 2))
            assert await next_event(socket) == Start(id="gone")
            assert isinstance(await next_event(socket), bytes)
        await asyncio.sleep(3.0)  # long enough for several more chunks, had synthesis gone on
        produced = counting.chunks - before
        pieces = len(split_spans((await counting.phonemize(LONG_TEXT * 2)).phonemes))
        assert produced <= 3 < pieces, (produced, pieces)
    finally:
        server.stop()


# --- /invocations (batch) ---------------------------------------------------------------


def test_invocations_returns_wav_with_timing_headers(tts_server: ServerThread) -> None:
    response = httpx.post(
        f"{tts_server.http_url}/invocations", json={"text": "Batch mode works too."}, timeout=60
    )
    assert response.status_code == 200 and response.headers["content-type"] == "audio/wav"
    with wave.open(io.BytesIO(response.content)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24000, 1, 2)
        frames = wav.getnframes()
    assert abs(float(response.headers["x-audio-ms"]) - frames / 24) < 1
    assert float(response.headers["x-synthesis-ms"]) > 0


def test_invocations_pcm_format(tts_server: ServerThread) -> None:
    response = httpx.post(
        f"{tts_server.http_url}/invocations",
        json={"text": "Raw PCM.", "format": "pcm", "speed": 1.2},
        timeout=60,
    )
    assert response.status_code == 200 and response.headers["x-sample-rate"] == "24000"
    assert len(response.content) > 4800 and len(response.content) % 2 == 0


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{oops", "invalid_json"),
        (b"[]", "invalid_message"),
        (b'{"text": ""}', "empty_text"),
        (b'{"text": 3}', "invalid_message"),
        (b'{"text": "hi", "voice": "nobody"}', "unknown_voice"),
        (b'{"text": "hi", "format": "mp3"}', "invalid_message"),
        (json.dumps({"text": "y" * 3000}).encode(), "text_too_long"),
    ],
)
def test_invocations_bad_requests_get_4xx_json(
    tts_server: ServerThread, body: bytes, code: str
) -> None:
    response = httpx.post(f"{tts_server.http_url}/invocations", content=body, timeout=30)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code


def test_invocations_says_the_body_is_not_json_not_a_frame(tts_server: ServerThread) -> None:
    response = httpx.post(f"{tts_server.http_url}/invocations", content=b"{oops", timeout=30)
    assert response.json()["error"]["message"].startswith("body is not JSON: ")


async def test_a_websocket_at_an_unknown_path_is_a_404_not_a_403(tts_server: ServerThread) -> None:
    with pytest.raises(InvalidStatus) as refused:
        await connect(f"ws://127.0.0.1:{tts_server.port}/nowhere")
    assert refused.value.response.status_code == 404
    message = json.loads(refused.value.response.body)["error"]["message"]
    assert message == (
        "there is no WebSocket at /nowhere; the stream is at /invocations-bidirectional-stream "
        "or /ws"
    )


def test_invocations_refuses_an_oversized_body_with_413(tts_server: ServerThread) -> None:
    body = json.dumps({"text": "Hello.", "padding": "x" * 70_000}).encode()
    response = httpx.post(f"{tts_server.http_url}/invocations", content=body, timeout=30)
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "body_too_large" and "65536 bytes" in error["message"]


def test_invocations_answers_413_before_an_undeclared_body_ends(tts_server: ServerThread) -> None:
    """A chunked body (no Content-Length) is refused once it passes the limit, mid-stream."""
    with socket.create_connection(("127.0.0.1", tts_server.port), timeout=30) as sock:
        sock.sendall(
            b"POST /invocations HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b" " * 2**14
        for _ in range(5):  # 80 KiB of a body that never ends: no final 0-length chunk
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        reply = b""
        while b"body_too_large" not in reply and (part := sock.recv(4096)):
            reply += part  # the status line and headers may come before the body
    assert reply.startswith(b"HTTP/1.1 413") and b"body_too_large" in reply


# --- readiness ----------------------------------------------------------------------------


def test_ping_is_healthy_after_a_warmup_through_the_decode_path(tts_server: ServerThread) -> None:
    body = httpx.get(f"{tts_server.http_url}/ping").json()
    assert body["status"] == "Healthy"
    assert body["warmup_audio_ms"] > 500 and body["warmup_rms"] > 0.01


async def test_ping_is_503_until_the_engine_is_warm(engine: Engine) -> None:
    gate = asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow_loader(_settings: object) -> Engine:
        asyncio.run_coroutine_threadsafe(gate.wait(), loop).result(timeout=30)
        return engine

    server = ServerThread(create_app(loader=slow_loader)).start()
    try:
        async with httpx.AsyncClient(base_url=server.http_url) as client:
            before = await client.get("/ping")
            assert before.status_code == 503 and before.json()["status"] == "Loading"
            invoke = await client.post("/invocations", json={"text": "Too early."})
            assert invoke.status_code == 503
            async with connect(server.ws_url) as socket:
                error = decode_server(await socket.recv())
                assert isinstance(error, Error) and "not ready" in error.message
                with pytest.raises(ConnectionClosed):
                    await socket.recv()
            gate.set()
            for _ in range(300):
                if (await client.get("/ping")).status_code == 200:
                    break
                await asyncio.sleep(0.05)
            assert (await client.get("/ping")).json()["status"] == "Healthy"
    finally:
        server.stop()


class SilentEngine(CountingEngine):
    """Loads fine, answers every request, but produces only silence."""

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        return [Timed(np.zeros(24000, dtype=np.float32)) for _ in pieces]

    def _window_batch(self, lane: int, jobs: Sequence[WindowJob]) -> list[np.ndarray]:
        return [np.zeros(job.window.frames * SAMPLES_PER_FRAME, np.float32) for job in jobs]


def _failing_loader(_settings: object) -> Engine:
    raise EngineError("/opt/ml/model/config.json is missing")


@pytest.mark.parametrize("broken", ["silent", "missing-model"])
def test_a_broken_model_never_answers_healthy(engine: Engine, broken: str) -> None:
    loader = (lambda _s: SilentEngine(engine)) if broken == "silent" else _failing_loader
    server = ServerThread(create_app(loader=loader)).start()  # type: ignore[arg-type]
    try:
        for _ in range(100):
            body = httpx.get(f"{server.http_url}/ping").json()
            if body["status"] == "Failed":
                break
            asyncio.run(asyncio.sleep(0.05))
        response = httpx.get(f"{server.http_url}/ping")
        assert response.status_code == 503 and response.json()["status"] == "Failed"
        assert ("implausible" if broken == "silent" else "config.json") in response.json()["reason"]
    finally:
        server.stop()


def test_no_handler_assumes_text_frames() -> None:
    root = Path(__file__).resolve().parents[2]
    sources = [*root.glob("tts_server/**/*.py"), *root.glob("tts_client/**/*.py")]
    sources += [*root.glob("agent/**/*.py")]
    offenders = [
        str(p) for p in sources if re.search(r"receive_text\(|receive_json\(", p.read_text())
    ]
    assert sources and offenders == []


# --- one error shape on every route --------------------------------------------------------


def test_invocations_refuses_an_unknown_field_by_name(tts_server: ServerThread) -> None:
    body = {"text": "Typed.", "sped": 1.5}
    response = httpx.post(f"{tts_server.http_url}/invocations", json=body, timeout=30)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_message" and "'sped'" in error["message"]


async def test_an_unknown_speak_field_is_an_error_for_that_segment(ws: ClientConnection) -> None:
    await ws.send(json.dumps({"type": "speak", "id": "typo", "text": "Hi.", "sped": 2}))
    error = await next_event(ws)
    assert isinstance(error, Error) and (error.id, error.code) == ("typo", "invalid_message")
    await ws.send(encode(Speak(id="next", text="Still here.")))  # the connection goes on
    assert isinstance((await until_terminal(ws, {"next"}))[-1], End)


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/invocations", 405, "method_not_allowed"),
        ("POST", "/ping", 405, "method_not_allowed"),
        ("GET", "/nowhere", 404, "not_found"),
        ("GET", "/v1/audio/speech", 405, "method_not_allowed"),
        ("GET", "/v1/nowhere", 404, "not_found"),
    ],
)
def test_framework_errors_have_the_project_error_shape(
    tts_server: ServerThread, method: str, path: str, status: int, code: str
) -> None:
    """FastAPI's {"detail": ...} never leaks; /v1 answers in OpenAI's shape (same two fields)."""
    response = httpx.request(method, f"{tts_server.http_url}{path}", timeout=30)
    assert response.status_code == status
    body = response.json()
    assert "detail" not in body and body["error"]["code"] == code
    assert path in body["error"]["message"]
    if path.startswith("/v1/"):
        assert body["error"]["type"] == "invalid_request_error"
    if status == 405:
        assert response.headers["allow"] in body["error"]["message"]


def test_invocations_refuses_text_the_g2p_cannot_speak_with_422(tts_server: ServerThread) -> None:
    body = {"text": "東京 means Tokyo."}
    response = httpx.post(f"{tts_server.http_url}/invocations", json=body, timeout=30)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "unsupported_text" and "CJK letters (東京)" in error["message"]


async def test_a_segment_the_g2p_cannot_speak_is_an_error_without_audio(
    ws: ClientConnection,
) -> None:
    await ws.send(encode(Speak(id="ja", text="東京 means Tokyo.")))
    events = await until_terminal(ws, {"ja"})
    assert not [event for event in events if isinstance(event, bytes)]
    assert isinstance(events[-1], Error) and events[-1].id == "ja"
    assert events[-1].code is ErrorCode.UNSUPPORTED_TEXT and len(events) == 1  # before start
    assert "cannot speak CJK letters" in events[-1].message
