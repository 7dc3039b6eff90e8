"""Bad audio over a real ``/ws`` socket (issue 49, deliverable 5): silence, clipping, a click
train and a ten-minute utterance each get a bounded, typed answer, and the socket serves on.

The listening is the real one (Silero, Smart Turn, Whisper tiny.en), the TTS server the real one,
the LLM the demo model. Each case ends with ``listen.stop``, whose answer comes after every
frame before it was taken, so the events between are the whole answer to the audio; then a
typed prompt starts a turn (the socket serves on).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from websockets.asyncio.client import ClientConnection

from agent.config import AgentConfig, ListeningConfig
from agent.doors import devserver
from agent.listening.whisper import shared_whisper
from tests.agent.leg.test_ws import Frame, kinds, open_socket, until
from tests.agent.leg.test_ws_listening import HANDS_FREE, PUSH_TO_TALK, listen, of_type, say
from tests.agent.listening.speech import silence, spoken, to_pcm
from tts_server.engines import Engine
from tts_server.testing.server_thread import ServerThread

QUESTION = "What is the capital of France?"
LISTENING = ListeningConfig(burst_s=1200.0)  # the defaults (a 20 s cap); the test runs ahead
TEN_MINUTES_MS = 600_000
RATE = 16_000


@pytest.fixture(scope="module")
def server(tts_server: ServerThread) -> Iterator[ServerThread]:
    config = AgentConfig(model="demo", tts_url=tts_server.ws_url, listening=LISTENING)
    started = ServerThread(devserver.create_app(config, shared_whisper(LISTENING))).start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def question(engine: Engine) -> bytes:
    return spoken(engine, QUESTION)


def clipped(pcm: bytes, gain: float = 12.0) -> bytes:
    """``pcm`` driven ``gain`` times over full scale and clipped, as a hot microphone does."""
    samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
    return to_pcm(samples * gain)


def click_train(ms: int = 1000, per_second: int = 20) -> bytes:
    """Full-scale clicks (a 1 ms pulse each, alternating sign), ``per_second`` of them."""
    samples = np.zeros(RATE * ms // 1000, np.float32)
    for n, at in enumerate(range(0, len(samples), RATE // per_second)):
        samples[at : at + RATE // 1000] = 1.0 if n % 2 else -1.0
    return to_pcm(samples)


def without_silence(pcm: bytes) -> bytes:
    """``pcm`` with its leading and trailing quiet cut, so that copies of it run on unbroken."""
    samples = np.frombuffer(pcm, "<i2")
    loud = np.flatnonzero(np.abs(samples) > 300)
    return samples[loud[0] : loud[-1] + 1].tobytes()


async def answer_to(
    socket: ClientConnection, mode: dict[str, Any], pcm: bytes, pressed: bool
) -> list[Frame]:
    """Listen in ``mode``, send ``pcm`` (pressed: within ``talk.start`` … ``talk.end``), stop
    listening; the frames that answered, up to the ``listening`` that says it stopped."""
    await listen(socket, mode)
    if pressed:
        await socket.send('{"type": "talk.start"}')
    await say(socket, pcm)
    if pressed:
        await socket.send('{"type": "talk.end"}')
    await socket.send('{"type": "listen.stop"}')
    frames = await until(socket, "listening", 120)
    while kinds(frames).count("transcript") and "turn.start" not in kinds(frames):
        if not of_type(frames, "transcript")[-1]["text"]:
            break
        frames += await until(socket, "turn.start")  # the transcript's turn: heard
    return frames


async def serves_on(socket: ClientConnection) -> None:
    """A typed prompt after the bad audio is answered with a turn."""
    await socket.send(json.dumps({"type": "prompt", "prompt": "Still there?"}))
    await until(socket, "turn.start")
    await socket.send('{"type": "cancel"}')
    await until(socket, "cancelled")


def listening_events(frames: list[Frame]) -> list[str]:
    names = {"speech.start", "speech.end", "transcript", "error", "turn.start"}
    return [k for k in kinds(frames) if k in names]


@pytest.mark.parametrize("mode", ["hands_free", "push_to_talk"])
async def test_silence_gets_no_turn(server: ServerThread, mode: str) -> None:
    pressed = mode == "push_to_talk"
    async with await open_socket(server, f"silence-{mode}") as socket:
        began = time.monotonic()
        ms = 3000 if pressed else 60_000  # a minute of it, hands-free
        frames = await answer_to(socket, HANDS_FREE | {"mode": mode}, silence(ms), pressed)
        took = time.monotonic() - began
        await serves_on(socket)
    if pressed:  # the press is an utterance; nothing was said in it
        assert listening_events(frames) == ["speech.start", "speech.end", "transcript"]
        assert of_type(frames, "transcript")[0]["text"] == ""
    else:
        assert listening_events(frames) == []  # silence is not speech: nothing to answer
    assert took < 30, took


@pytest.mark.parametrize("mode", ["hands_free", "push_to_talk"])
async def test_clipped_speech_is_heard(server: ServerThread, question: bytes, mode: str) -> None:
    pressed = mode == "push_to_talk"
    pcm = silence(300) + clipped(question) + silence(1200)
    async with await open_socket(server, f"clipped-{mode}") as socket:
        frames = await answer_to(socket, HANDS_FREE | {"mode": mode}, pcm, pressed)
        await serves_on(socket)
    assert listening_events(frames) == ["speech.start", "speech.end", "transcript", "turn.start"]
    assert "capital" in of_type(frames, "transcript")[0]["text"].lower()


@pytest.mark.parametrize("mode", ["hands_free", "push_to_talk"])
async def test_a_click_train_starts_no_turn(server: ServerThread, mode: str) -> None:
    pressed = mode == "push_to_talk"
    pcm = silence(300) + click_train() + silence(1200)
    async with await open_socket(server, f"clicks-{mode}") as socket:
        frames = await answer_to(socket, HANDS_FREE | {"mode": mode}, pcm, pressed)
        await serves_on(socket)
    assert "turn.start" not in kinds(frames)
    assert all(t["text"] == "" for t in of_type(frames, "transcript"))


async def test_a_ten_minute_utterance_is_cut_at_the_cap_and_heard(
    server: ServerThread, question: bytes
) -> None:
    talk = without_silence(question)
    pcm = talk * (TEN_MINUTES_MS * RATE * 2 // 1000 // len(talk) + 1)
    async with await open_socket(server, "ten-minutes") as socket:
        began = time.monotonic()
        frames = await answer_to(socket, PUSH_TO_TALK, pcm, pressed=True)
        took = time.monotonic() - began
        await serves_on(socket)
    events = listening_events(frames)
    assert events == ["speech.start", "error", "speech.end", "transcript", "turn.start"], events
    assert of_type(frames, "error")[0]["code"] == "utterance_too_long"
    end = of_type(frames, "speech.end")[0]
    assert (end["reason"], end["audio_ms"]) == ("max_length", LISTENING.max_utterance_s * 1000)
    assert "capital" in of_type(frames, "transcript")[0]["text"].lower()
    assert took < 120, took
