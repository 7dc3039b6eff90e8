"""False interruptions on ``/ws``, over a real socket: speech over a reply pauses it, and its
words decide (docs/listening.md, "False interruptions").

The dev server with the demo model, the real TTS server, Silero and Smart Turn; the recognizer
is scripted (it answers what the test says the user said, when the test lets it), so that the
decision, not Whisper's reading, is what is tested. Speech is the project's own TTS sent as MIC
frames, faster than real time: the bounds are on the loop's clock, the speech on its windows.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from agent.config import AgentConfig, ListeningConfig
from agent.core.llm import demo_reply
from agent.core.memory import INTERRUPTED_NOTE
from agent.doors import devserver
from agent.listening.recognizer import Recognition
from tests.agent.leg.test_ws import Frame, kinds, open_socket, receive, until, voice_agent
from tests.agent.listening.speech import mic_frames, silence, spoken
from tts_server.engines import Engine
from tts_server.testing.server_thread import ServerThread

LISTENING = ListeningConfig(burst_s=600.0)  # the tests send faster than real time
HANDS_FREE = {"type": "listen", "mode": "hands_free", "sample_rate": 16000, "format": "s16le"}
PROMPT = "Talk for a long while"
BACKCHANNEL = "Okay."  # said for 300-900 ms: over the barge-in, under the interrupt bound
LONG = "Please tell me a short story about a friendly robot."  # over the interrupt bound
TURN_ENDS = 1200  # ms of silence after which an utterance has ended, whatever the model says


class Scripted:
    """A recognizer that hears ``text``, once ``go`` is set (set: at once); asked as over a
    paused reply (``murmurs``), it hears ``murmured`` if that is set, as tiny.en reads a
    murmur it is unsure of as one there."""

    queue_depth = 0

    def __init__(self) -> None:
        self.text = ""
        self.murmured: str | None = None
        self.murmurs: list[bool] = []  # each recognition's flag: over a paused reply
        self.go = threading.Event()  # set from the test's loop, waited on the server's
        self.go.set()

    async def load(self) -> None:
        return None

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        self.murmurs.append(murmurs)
        if not self.go.is_set():
            await asyncio.to_thread(self.go.wait)
        if murmurs and self.murmured is not None:
            return Recognition(self.murmured, 5.0)
        return Recognition(self.text, 5.0)


@pytest.fixture(scope="module")
def speech(engine: Engine) -> dict[str, bytes]:
    return {text: spoken(engine, text) for text in (BACKCHANNEL, LONG)}


@pytest.fixture(scope="module")
def recognizer() -> Scripted:
    return Scripted()


@pytest.fixture(scope="module")
def server(tts_server: ServerThread, recognizer: Scripted) -> Iterator[ServerThread]:
    config = AgentConfig(model="demo", tts_url=tts_server.ws_url, listening=LISTENING)
    running = ServerThread(devserver.create_app(config, recognizer)).start()
    yield running
    running.stop()


async def say(socket: ClientConnection, pcm: bytes) -> None:
    for frame in mic_frames(pcm):
        await socket.send(frame)


def events(frames: list[Frame]) -> list[str]:
    return [k for k in kinds(frames) if k != "<audio>"]


def of_type(frames: list[Frame], kind: str) -> list[dict[str, Any]]:
    return [f for f in frames if isinstance(f, dict) and f["type"] == kind]


async def speaking(socket: ClientConnection, server: ServerThread, name: str) -> tuple[Any, str]:
    """Listen hands-free, ask for a long reply and wait for its first audio; the conversation's
    agent and the turn's id."""
    agent = voice_agent(server).conversations.get(name).agent
    agent.model.update_config(sentences=3)
    await socket.send(json.dumps(HANDS_FREE))
    assert (await until(socket, "listening"))[-1]["mode"] == "hands_free"  # type: ignore[index]
    await socket.send(json.dumps({"type": "prompt", "prompt": PROMPT}))
    started = await until(socket, "turn.start")
    async with asyncio.timeout(60):
        while not isinstance(await receive(socket), bytes):
            pass
    return agent, started[-1]["turn_id"]  # type: ignore[index]


def said(agent: Any) -> list[tuple[str, str]]:
    return [(m["role"], m["content"][0]["text"]) for m in agent.messages]


async def test_a_backchannel_pauses_the_reply_then_resumes_it_whole_and_is_no_prompt(
    server: ServerThread, speech: dict[str, bytes], recognizer: Scripted
) -> None:
    recognizer.text = "Okay."
    async with await open_socket(server, "resumed") as socket:
        agent, turn_id = await speaking(socket, server, "resumed")
        await say(socket, speech[BACKCHANNEL] + silence(TURN_ENDS))
        frames = await until(socket, "reply.resumed")
        frames += await until(socket, "turn.end", limit_s=120)
    order = events(frames)
    assert [e for e in order if e.startswith(("reply.", "speech.", "transcript", "cancel"))] == [
        "speech.start",
        "reply.paused",
        "speech.end",
        "transcript",
        "reply.resumed",
    ]
    assert of_type(frames, "reply.paused")[0]["turn_id"] == turn_id
    assert of_type(frames, "reply.resumed")[0]["turn_id"] == turn_id
    assert of_type(frames, "transcript")[0]["backchannel"] is True  # no turn follows
    assert order.count("turn.start") == 0  # no turn of the backchannel
    assert "<audio>" in kinds(frames[frames.index(of_type(frames, "reply.paused")[0]) :])
    # The history: the prompt and the reply whole; the backchannel is not in it.
    assert said(agent) == [("user", PROMPT), ("assistant", demo_reply(PROMPT, 3))]


@pytest.mark.parametrize(
    ("heard", "murmured", "then"),
    [("And then I came.", "Mm-hmm.", "reply.resumed"), ("Stop.", "Stop.", "cancelled")],
)
async def test_over_the_paused_reply_a_murmur_is_read_as_one_and_resumes_it_and_stop_cuts(
    server: ServerThread,
    speech: dict[str, bytes],
    recognizer: Scripted,
    heard: str,
    murmured: str,
    then: str,
) -> None:
    """Every recognition of the words over the paused reply (the eager one at its pause too)
    is asked as one that may be a murmur; a murmur read as one resumes the reply, "Stop." cuts
    it (docs/listening.md, "False interruptions")."""
    recognizer.text, recognizer.murmured, recognizer.murmurs = heard, murmured, []
    try:
        async with await open_socket(server, f"murmur-{then}") as socket:
            await speaking(socket, server, f"murmur-{then}")
            asked_before = list(recognizer.murmurs)
            await say(socket, speech[BACKCHANNEL] + silence(TURN_ENDS))
            frames = await until(socket, then)
    finally:
        recognizer.murmured = None
    assert asked_before == [] and recognizer.murmurs and all(recognizer.murmurs)
    [transcript] = of_type(frames, "transcript")
    assert transcript["text"] == murmured
    assert transcript["backchannel"] is (then == "reply.resumed")
    order = [e for e in events(frames) if e.startswith(("reply.", "transcript", "cancelled"))]
    assert order == ["reply.paused", "transcript", then]


async def test_an_utterance_over_no_reply_is_not_asked_as_a_murmur(
    server: ServerThread, speech: dict[str, bytes], recognizer: Scripted
) -> None:
    recognizer.text, recognizer.murmured, recognizer.murmurs = "Okay.", "Mm-hmm.", []
    try:
        async with await open_socket(server, "murmur-alone") as socket:
            await socket.send(json.dumps(HANDS_FREE))
            await until(socket, "listening")
            await say(socket, speech[BACKCHANNEL] + silence(TURN_ENDS))
            frames = await until(socket, "turn.start")
    finally:
        recognizer.murmured = None
    assert recognizer.murmurs and not any(recognizer.murmurs)
    assert of_type(frames, "transcript")[0]["text"] == "Okay."


async def test_words_over_the_paused_reply_cut_it_and_are_the_next_prompt(
    server: ServerThread, speech: dict[str, bytes], recognizer: Scripted
) -> None:
    recognizer.text = "Okay, stop."
    async with await open_socket(server, "cut") as socket:
        agent, turn_id = await speaking(socket, server, "cut")
        await say(socket, speech[BACKCHANNEL] + silence(TURN_ENDS))
        frames = await until(socket, "turn.start")
        frames += await until(socket, "turn.end", limit_s=120)
    order = [e for e in events(frames) if e not in ("text.delta", "segment", "segment.end")]
    paused = order.index("reply.paused")
    assert order[paused:][:5] == [
        "reply.paused",
        "speech.end",
        "transcript",
        "cancelled",
        "turn.start",
    ]
    assert "reply.resumed" not in order
    assert of_type(frames, "transcript")[0]["backchannel"] is False
    assert of_type(frames, "cancelled")[0]["turn_id"] == turn_id
    (user, prompt), (_, reply), (user2, words) = said(agent)[:3]
    assert (user, prompt, user2, words) == ("user", PROMPT, "user", "Okay, stop.")
    assert reply.endswith(INTERRUPTED_NOTE), reply


async def test_no_words_by_the_resume_bound_plays_the_reply_on_and_late_words_cut_it(
    server: ServerThread, speech: dict[str, bytes], recognizer: Scripted
) -> None:
    recognizer.text = "What time is it?"
    recognizer.go.clear()  # the words take longer than the resume bound
    try:
        async with await open_socket(server, "bound") as socket:
            await speaking(socket, server, "bound")
            await say(socket, speech[BACKCHANNEL] + silence(TURN_ENDS))
            loop = asyncio.get_running_loop()
            frames = await until(socket, "reply.paused")
            paused_at = loop.time()
            frames += await until(socket, "reply.resumed")
            waited = loop.time() - paused_at
            recognizer.go.set()
            frames += await until(socket, "turn.start")
    finally:
        recognizer.go.set()
    assert 1.3 <= waited <= 3.0, waited  # 1.5 s from the pause (its event came first)
    order = [e for e in events(frames) if e.startswith(("reply.", "speech.", "transcript"))]
    assert order == ["speech.start", "reply.paused", "speech.end", "reply.resumed", "transcript"]
    assert events(frames)[-2:] == ["cancelled", "turn.start"]


async def test_speech_past_the_interrupt_bound_cuts_the_reply_before_its_words(
    server: ServerThread, speech: dict[str, bytes], recognizer: Scripted
) -> None:
    recognizer.text = "Yeah."  # a backchannel's words, but the speech went on too long
    async with await open_socket(server, "long") as socket:
        await speaking(socket, server, "long")
        await say(socket, speech[LONG] + silence(TURN_ENDS))
        frames = await until(socket, "turn.start")
    order = [e for e in events(frames) if e.startswith(("reply.", "speech.", "transcript", "canc"))]
    assert order == ["speech.start", "reply.paused", "cancelled", "speech.end", "transcript"]
