"""The TTS server's /metrics: each family as served, from real sockets and HTTP requests.

The server runs a ``FakeEngine`` whose engine thread the test can hold (``gate``), so the live
gauges are read while a segment is known to be in synthesis and another queued.
"""

from __future__ import annotations

import asyncio
import threading
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
def server(gate: threading.Event) -> Iterator[ServerThread]:
    server = start_server(FakeEngine(gate), max_sessions=1, max_queued=8)
    yield server
    gate.set()
    server.stop()


@pytest.fixture
async def client(server: ServerThread) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.http_url, timeout=5) as http:
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


async def test_a_speech_api_response_is_timed_as_one_synthesis(client: httpx.AsyncClient) -> None:
    speech = {"model": "tts-1", "input": "One. And two.", "voice": "alloy"}
    speech["response_format"] = "pcm"
    response = await client.post("/v1/audio/speech", json=speech)
    assert response.status_code == 200 and response.content
    samples = await scrape(client)
    fake = {"engine": "fake"}
    assert value(samples, "tts_first_audio_seconds_count", **fake) == 1
    assert value(samples, "tts_synthesis_seconds_count", **fake) == 1
    audio_s = len(response.content) / 2 / 24000  # pcm: 24 kHz s16le
    assert value(samples, "tts_audio_seconds_total", **fake) == pytest.approx(audio_s)
    first = value(samples, "tts_first_audio_seconds_sum", **fake)
    assert 0 < first <= value(samples, "tts_synthesis_seconds_sum", **fake)


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
    assert value(samples, "tts_errors_total", code="http_404") == 1
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
        async with connect(server.ws_url) as refused:  # over max_sessions: busy, 1013
            assert isinstance(error := decode_server(await refused.recv()), Error)
            assert error.code == "busy"
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
    first = asyncio.create_task(scheduler.synthesize(Piece("x", "v", 1.0)))
    async with asyncio.timeout(10):
        while scheduler.stats.in_flight != 1:
            await asyncio.sleep(0.001)
    rest = [asyncio.create_task(scheduler.synthesize(Piece(t, "v", 1.0))) for t in "abc"]
    async with asyncio.timeout(10):
        while scheduler.stats.queued != 3:
            await asyncio.sleep(0.001)
    release.set()
    await asyncio.gather(first, *rest)
    scheduler.close()
    assert scheduler.stats.sizes == {1: 1, 3: 1}
