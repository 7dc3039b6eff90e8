"""The TTS server's /metrics: each family as served, from real sockets and HTTP requests.

The server runs a ``FakeEngine`` whose engine thread the test can hold (``gate``), so the live
gauges are read while a segment is known to be in synthesis and another queued.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from websockets.asyncio.client import ClientConnection, connect

from tests.conftest import start_server
from tts_protocol import End, Error, Ready, Speak, decode_server, encode
from tts_server.engines.scheduler import BatchScheduler, Piece
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    """Every sample of an exposition, by name and sorted labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def scrape(client: httpx.AsyncClient) -> Samples:
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    return parse(response.text)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    event.set()
    yield event
    event.set()  # never leave the engine thread blocked


@pytest.fixture
def engine(gate: threading.Event) -> FakeEngine:
    return FakeEngine(gate)


@pytest.fixture
def server(engine: FakeEngine, gate: threading.Event) -> Iterator[ServerThread]:
    server = start_server(engine, max_sessions=1, max_queued=8)
    yield server
    gate.set()
    server.stop()


@pytest.fixture
async def client(server: ServerThread) -> AsyncIterator[httpx.AsyncClient]:
    # the first speech request loads spaCy's sentencizer: seconds on a loaded box
    async with httpx.AsyncClient(base_url=server.http_url, timeout=30) as http:
        yield http


async def opened(url: str) -> ClientConnection:
    socket = await connect(url)
    assert isinstance(decode_server(await socket.recv()), Ready)
    return socket


async def until_sample(
    client: httpx.AsyncClient, name: str, expected: float, **labels: str
) -> Samples:
    async with asyncio.timeout(10):
        while value(samples := await scrape(client), name, **labels) != expected:
            await asyncio.sleep(0.02)
    return samples


async def test_a_spoken_segment_is_timed_and_counted(
    server: ServerThread, client: httpx.AsyncClient
) -> None:
    async with await opened(server.ws_url) as socket:
        await socket.send(encode(Speak(id="s1", text="Hello there, how are you today?")))
        async with asyncio.timeout(30):
            while isinstance(frame := await socket.recv(), bytes) or not isinstance(
                end := decode_server(frame), End
            ):
                pass
    samples = await scrape(client)
    fake = {"engine": "fake"}
    for histogram in ("tts_queue_wait_seconds", "tts_first_audio_seconds"):
        assert value(samples, f"{histogram}_count", **fake) == 1
    assert value(samples, "tts_synthesis_seconds_count", **fake) == 1
    assert value(samples, "tts_segments_total", outcome="done", **fake) == 1
    audio_s = end.samples / 24000
    assert value(samples, "tts_audio_seconds_total", **fake) == pytest.approx(audio_s)
    rtf = value(samples, "tts_real_time_factor_sum", **fake)
    synthesis = value(samples, "tts_synthesis_seconds_sum", **fake)
    assert rtf == pytest.approx(synthesis / audio_s, rel=1e-6)
    # the warm-up's and this segment's pieces, one per engine call: every batch is of size 1
    batches = value(samples, "tts_batch_size_count", **fake)
    assert batches >= 2 and value(samples, "tts_batch_size_bucket", le="1", **fake) == batches
    assert value(samples, "tts_engine_ready") == 1


HOLD_S = 0.3  # how long a timed test holds the engine thread before its first piece


async def held_request(
    client: httpx.AsyncClient, engine: FakeEngine, gate: threading.Event, path: str, body: object
) -> tuple[httpx.Response, float]:
    """POST ``body``, its first piece held ``HOLD_S`` on the engine; the response, wall time."""
    calls = engine.calls

    def hold() -> None:
        deadline = time.monotonic() + 30
        while engine.calls == calls and time.monotonic() < deadline:  # the piece reached it
            time.sleep(0.001)
        time.sleep(HOLD_S)
        gate.set()

    gate.clear()
    holder = threading.Thread(target=hold)
    started = time.perf_counter()
    holder.start()
    try:
        response = await client.post(path, json=body)
    finally:
        holder.join()
    return response, time.perf_counter() - started


def assert_seconds(observed: float, wall_s: float) -> None:
    """A duration observed in seconds: at least part of the hold, at most the wall time.

    The engine held the first piece ``HOLD_S`` after the synthesis started, inside the request.
    A value in milliseconds (hundreds for a 0.3 s hold) fails the upper bound, one in
    kiloseconds the lower; 60 s is far beyond any of these requests.
    """
    assert HOLD_S <= observed <= wall_s < 60


async def test_a_speech_api_response_is_timed_as_one_synthesis(
    client: httpx.AsyncClient, engine: FakeEngine, gate: threading.Event
) -> None:
    speech = {"model": "tts-1", "input": "One. And two.", "voice": "alloy"}
    speech["response_format"] = "pcm"
    response, wall_s = await held_request(client, engine, gate, "/v1/audio/speech", speech)
    assert response.status_code == 200 and response.content
    samples = await scrape(client)
    fake = {"engine": "fake"}
    assert value(samples, "tts_first_audio_seconds_count", **fake) == 1
    assert value(samples, "tts_synthesis_seconds_count", **fake) == 1
    audio_s = len(response.content) / 2 / 24000  # pcm: 24 kHz s16le
    assert value(samples, "tts_audio_seconds_total", **fake) == pytest.approx(audio_s)
    first = value(samples, "tts_first_audio_seconds_sum", **fake)
    synthesis = value(samples, "tts_synthesis_seconds_sum", **fake)
    assert_seconds(first, wall_s)
    assert_seconds(synthesis, wall_s)
    assert first <= synthesis


async def test_an_invocation_is_timed_in_seconds_as_its_headers_say_in_ms(
    client: httpx.AsyncClient, engine: FakeEngine, gate: threading.Event
) -> None:
    body = {"text": "One. And two.", "format": "pcm"}
    response, wall_s = await held_request(client, engine, gate, "/invocations", body)
    assert response.status_code == 200 and response.content
    samples = await scrape(client)
    fake = {"engine": "fake"}
    assert value(samples, "tts_first_audio_seconds_count", **fake) == 1
    assert value(samples, "tts_synthesis_seconds_count", **fake) == 1
    first = value(samples, "tts_first_audio_seconds_sum", **fake)
    synthesis = value(samples, "tts_synthesis_seconds_sum", **fake)
    assert_seconds(first, wall_s)
    assert_seconds(synthesis, wall_s)
    assert first <= synthesis
    # the headers report the same two timings in milliseconds, to a tenth
    assert float(response.headers["x-first-audio-ms"]) == pytest.approx(first * 1000, abs=0.1)
    assert float(response.headers["x-synthesis-ms"]) == pytest.approx(synthesis * 1000, abs=0.1)


async def test_error_frames_and_http_errors_are_counted_by_code(
    server: ServerThread, client: httpx.AsyncClient
) -> None:
    async with await opened(server.ws_url) as socket:
        await socket.send("[" * 5000)
        await socket.send(encode(Speak(id="v", text="Hi.", voice=(("zz_nobody", 1.0),))))
        codes = [decode_server(await socket.recv()).code for _ in range(2)]  # type: ignore[union-attr]
    assert codes == ["invalid_json", "unknown_voice"]
    assert (await client.post("/invocations", content=b"{nope")).status_code == 400
    speech = {"model": "tts-1", "input": "Hi.", "voice": "zz_nobody"}
    assert (await client.post("/v1/audio/speech", json=speech)).status_code == 400
    assert (await client.get("/no/such/route")).status_code == 404
    samples = await scrape(client)
    assert value(samples, "tts_errors_total", code="invalid_json") == 2  # frame and body
    assert value(samples, "tts_errors_total", code="unknown_voice") >= 1
    assert value(samples, "tts_errors_total", code="not_found") == 1  # the body's own code
    assert sum(v for (name, _), v in samples.items() if name == "tts_errors_total") == 5


async def test_gauges_are_read_live_and_refusals_counted(
    server: ServerThread, client: httpx.AsyncClient, gate: threading.Event
) -> None:
    gate.clear()  # the engine thread holds the first piece
    async with await opened(server.ws_url) as socket:
        await socket.send(encode(Speak(id="a", text="One.")))
        await socket.send(encode(Speak(id="b", text="Two.")))
        samples = await until_sample(client, "tts_pieces_in_flight", 1, engine="fake")
        assert value(samples, "tts_sessions_open") == 1
        assert value(samples, "tts_segments_in_flight") == 1
        assert value(samples, "tts_segments_queued") == 1
        assert value(samples, "tts_sessions_max") == 1
        async with await opened(server.ws_url) as other:  # an idle socket is let in
            assert value(await scrape(client), "tts_connections_open") == 2
            await other.send(encode(Speak(id="c", text="Three.")))  # over max_sessions: busy
            assert isinstance(error := decode_server(await other.recv()), Error)
            assert (error.code, error.id) == ("busy", "c")
        gate.set()
        await until_sample(client, "tts_segments_queued", 0)
    samples = await until_sample(client, "tts_sessions_open", 0)
    assert value(samples, "tts_refusals_total", kind="session") == 1
    assert value(samples, "tts_errors_total", code="busy") == 1


async def test_the_scheduler_counts_batches_by_size() -> None:
    release = threading.Event()

    def run(lane: int, pieces: list[Piece]) -> list[str]:
        release.wait(10)
        return [p.phonemes for p in pieces]

    scheduler = BatchScheduler(run, size=lambda p: 1, max_batch=4)
    first = asyncio.create_task(scheduler.synthesize(Piece("x", (("v", 1.0),), 1.0)))
    async with asyncio.timeout(10):
        while scheduler.stats.in_flight != 1:
            await asyncio.sleep(0.001)
    rest = [asyncio.create_task(scheduler.synthesize(Piece(t, (("v", 1.0),), 1.0))) for t in "abc"]
    async with asyncio.timeout(10):
        while scheduler.stats.queued != 3:
            await asyncio.sleep(0.001)
    release.set()
    await asyncio.gather(first, *rest)
    scheduler.close()
    assert scheduler.stats.sizes == {1: 1, 3: 1}
