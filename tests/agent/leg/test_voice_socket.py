"""``VoiceSocket`` in process: ASGI messages in and out, scripted turns, no network.

The socket's own rules, each in milliseconds: frame order, cancel and supersede, the
``config`` defaults, ``heard`` reports, the idle timeout, typed refusals, push-to-talk with a
recognizer that answers at once, one hands-free barge-in through the real VAD on the
project's own speech, and hands-free over a VAD that hears any sound (the paused reply, the
turn model's answers and failures, the reply begun early). ``test_ws.py`` runs the same leg
over real sockets, the real TTS server and both front doors; this module is what the ``ws``
mutation group reads first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from starlette.websockets import WebSocket

from agent.browser_leg import IDLE_CLOSE, MIC_MAGIC, SESSION_HEADER, split_audio_frame
from agent.config import ListeningConfig
from agent.events import (
    AudioDelta,
    ErrorEvent,
    Event,
    SpeechEnd,
    SpeechStart,
    TextDelta,
    Transcript,
    TurnEnd,
    TurnStart,
)
from agent.leg.hooks import conversation_of
from agent.leg.socket import VoiceSocket
from agent.listening.listener import ListeningService
from agent.listening.recognizer import Recognition, RecognitionError, RecognizerUnavailable
from agent.listening.turn_model import TurnModelError, TurnScore
from agent.requests import BadRequest, PlaybackReport, TurnRequest
from tests.agent.leg.voice_fakes import LoudIsSpeech
from tests.agent.listening.speech import mic_frames, silence, spoken
from tts_protocol import VoiceMix, parse_voice, voice_name
from tts_server.engines import Engine

Frame = dict[str, Any] | bytes
AUDIO = b"\x01\x00" * 2400  # 100 ms at 24 kHz
WAIT_S = 5.0
FAST_CLIENT = ListeningConfig(burst_s=600.0)  # the tests send audio faster than real time


class Script:
    """Turns that speak ``segments`` audio frames each, ``pace_s`` apart. A new turn
    supersedes the running one, which then ends with ``turn.end`` (as a conversation does)."""

    def __init__(
        self,
        segments: int = 3,
        pace_s: float = 0.0,
        linger_s: float = 0.0,
        first_event_s: float = 0.0,
    ) -> None:
        self.segments, self.pace_s, self.linger_s = segments, pace_s, linger_s
        self.first_event_s = first_event_s  # before turn.start: the turn is being set up
        self.requests: list[TurnRequest] = []
        self.started_at: list[float] = []  # on the loop's clock
        self.conversations: list[str] = []
        self.closed: list[str] = []  # turns whose events were closed before their end
        self._superseded: asyncio.Event | None = None
        self.failing: set[str] = set()  # turns whose relay raises after their text

    async def start(self, request: TurnRequest, conversation: str) -> AsyncIterator[Event]:
        if request.prompt == "refuse me":
            raise BadRequest("invalid_voice", "no such voice")
        if self._superseded is not None:
            self._superseded.set()
        self.requests.append(request)
        self.started_at.append(asyncio.get_running_loop().time())
        self.conversations.append(conversation)
        self._superseded = asyncio.Event()
        return self._events(f"t{len(self.requests)}", self._superseded)

    async def check_voice(self, voice: VoiceMix) -> VoiceMix:
        """A TTS server with ``jf_alpha`` and ``jm_kumo``, ``nova`` standing for ``jf_alpha``."""
        resolved = tuple(("jf_alpha" if name == "nova" else name, share) for name, share in voice)
        if any(name not in ("jf_alpha", "jm_kumo") for name, _ in resolved):
            raise BadRequest("unknown_voice", f"unknown voice {voice_name(voice)!r}")
        return resolved

    async def _events(self, turn_id: str, superseded: asyncio.Event) -> AsyncIterator[Event]:
        ended = False
        try:
            await asyncio.sleep(self.first_event_s)
            yield TurnStart(turn_id, "stream")
            yield TextDelta("Hello.")
            for seq in range(self.segments):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(superseded.wait(), self.pace_s)
                if superseded.is_set():
                    break
                if turn_id in self.failing:
                    raise RuntimeError("the model went away")
                yield AudioDelta(seq, AUDIO)
            ended = True
            yield TurnEnd()
            await asyncio.sleep(self.linger_s)  # a turn may finish its work after turn.end
        finally:
            if not ended:
                self.closed.append(turn_id)


def _kind(frame: Frame) -> str:
    return frame["type"] if isinstance(frame, dict) else "<audio>"


class Client:
    """The client side of one socket, as ASGI messages."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.frames: list[Frame] = []
        self.times: list[float] = []  # when each frame came, on the loop's clock
        self.closed: tuple[int, str] | None = None
        self.broken = False  # sends fail, as on a dropped connection
        self._arrived = asyncio.Event()
        self.inbox.put_nowait({"type": "websocket.connect"})

    async def receive(self) -> dict[str, Any]:
        return await self.inbox.get()

    async def send(self, message: dict[str, Any]) -> None:
        if self.broken:
            raise OSError("the network went away")
        if message["type"] == "websocket.send":
            text = message.get("text")
            self.frames.append(json.loads(text) if text is not None else message["bytes"])
            self.times.append(asyncio.get_running_loop().time())
        elif message["type"] == "websocket.close":
            self.closed = (message["code"], message.get("reason", ""))
        self._arrived.set()

    def say(self, message: dict[str, Any] | bytes, *, binary: bool = False) -> None:
        if isinstance(message, bytes):
            self.inbox.put_nowait({"type": "websocket.receive", "bytes": message})
        elif binary:  # JSON in a binary frame, as SageMaker and AgentCore hand it over
            self.inbox.put_nowait(
                {"type": "websocket.receive", "bytes": json.dumps(message).encode()}
            )
        else:
            self.inbox.put_nowait({"type": "websocket.receive", "text": json.dumps(message)})

    async def press_in_a_turn(self, after: str, pause_s: float = 0.0) -> None:
        """Push-to-talk on, a prompt, then ``talk.start`` once ``after`` came (and a pause)."""
        self.say({"type": "listen", "mode": "push_to_talk"})
        self.say(prompt())
        await self.wait_for(after)
        await asyncio.sleep(pause_s)
        self.say({"type": "talk.start"})

    def talk(self, frames: int, *, release: bool = True) -> None:
        """A press with ``frames`` of 32 ms of audio, let go unless ``release`` is False."""
        self.say({"type": "talk.start"})
        for _ in range(frames):
            self.say(MIC_MAGIC + AUDIO[:1024])
        if release:
            self.say({"type": "talk.end"})

    def hang_up(self) -> None:
        self.inbox.put_nowait({"type": "websocket.disconnect", "code": 1001})

    async def wait_for(self, kind: str, count: int = 1) -> int:
        """The index of the ``count``-th frame of ``kind``, once it has arrived."""
        async with asyncio.timeout(WAIT_S):
            while True:
                seen = [i for i, f in enumerate(self.frames) if _kind(f) == kind]
                if len(seen) >= count:
                    return seen[count - 1]
                self._arrived.clear()
                await self._arrived.wait()

    def kinds(self, start: int = 0, stop: int | None = None) -> list[str]:
        return [_kind(f) for f in self.frames[start:stop]]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if isinstance(f, dict) and f["type"] == kind]


class Recognizes:
    """A recognizer that hears ``text`` at once, or fails when told to."""

    def __init__(self) -> None:
        self.text = "What time is it?"
        self.fail = False
        self.unloadable = False
        self.heard: list[bytes] = []
        self.murmurs: list[bool] = []  # each recognition's: over a paused reply

    @property
    def queue_depth(self) -> int:
        return 0

    async def load(self) -> None:
        if self.unloadable:
            raise RecognizerUnavailable("the Whisper model did not load: no such folder")

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        self.heard.append(pcm)
        self.murmurs.append(murmurs)
        if self.fail:
            raise RecognitionError("recognition failed: injected")
        return Recognition(self.text, 12.5)


class Judges:
    """A turn model that gives ``scores`` in turn (the last one ever after)."""

    def __init__(self, *scores: float, recognizer: Recognizes | None = None) -> None:
        self.scores = scores
        self.asked = 0
        self.recognizer = recognizer
        self.heard_before: list[int] = []  # the recognitions begun when each answer came
        self.pcm: list[bytes] = []  # the audio of each ask
        self.error: TurnModelError | None = None  # fault injection

    async def load(self) -> None: ...

    async def judge(self, pcm: bytes) -> TurnScore:
        self.pcm.append(pcm)
        if self.error is not None:
            raise self.error
        score = self.scores[min(self.asked, len(self.scores) - 1)]
        self.asked += 1
        await asyncio.sleep(0.005)  # the model's thread: anything begun beside it runs now
        if self.recognizer is not None:
            self.heard_before.append(len(self.recognizer.heard))
        return TurnScore(score, 1.0)


class Socket:
    """A served ``VoiceSocket`` and its client."""

    def __init__(
        self,
        script: Script,
        idle_s: float = 30.0,
        recognizer: Recognizes | None = None,
        listening: ListeningConfig = FAST_CLIENT,
        judge: Judges | None = None,
    ) -> None:
        self.client, self.script = Client(), script
        self.errors: list[str] = []
        self.heard: list[str] = []
        self.withdrawn: list[tuple[str, str]] = []
        self.reports: list[PlaybackReport | None] = []  # the playback report of each withdrawal
        self.withdraw_error: Exception | None = None  # fault injection
        self.carried: list[str] = []  # the prompts the next withdrawals carry on, in turn
        service = None
        if recognizer is not None:
            service = ListeningService(listening, recognizer, judge)  # type: ignore[arg-type]
        scope = {"type": "websocket", "path": "/ws", "headers": [], "query_string": b""}
        websocket = WebSocket(scope, self.client.receive, self.client.send)
        self.voice = VoiceSocket(
            websocket,
            script.start,  # type: ignore[arg-type]  # an async generator, as a turn's events are
            "c1",
            idle_s,
            check_voice=script.check_voice,
            listening=service,
            observe=self.observe,
            withdraw=self.withdraw,
        )
        self.task: asyncio.Task[None] | None = None

    async def withdraw(
        self, turn_id: str, conversation: str, heard: PlaybackReport | None
    ) -> str | None:
        self.withdrawn.append((turn_id, conversation))
        self.reports.append(heard)
        if self.withdraw_error is not None:
            raise self.withdraw_error
        if self.carried:  # withdrawn: its prompt goes on
            return self.carried.pop(0)
        return None  # kept: the conversation's rule is tests/agent/core's

    def observe(self, event: Event) -> None:
        """What a front door's metrics are told: errors by code, listening events by type."""
        if isinstance(event, ErrorEvent):
            self.errors.append(event.code)
        elif isinstance(event, SpeechStart | SpeechEnd | Transcript):
            self.heard.append(event.type)

    async def reply(self, after: str = "<audio>", listen: str | None = None) -> Client:
        """Listening on in mode ``listen`` (None: not listening), a prompt, and its turn under
        way (``after`` came): the client, to go on from there."""
        if listen is not None:
            self.client.say({"type": "listen", "mode": listen})
        self.client.say(prompt())
        await self.client.wait_for(after)
        return self.client

    async def __aenter__(self) -> Socket:
        self.task = asyncio.create_task(self.voice.serve())
        await self.client.wait_for("ready")
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.task is not None
        if not self.task.done():
            self.client.hang_up()
        async with asyncio.timeout(WAIT_S):
            await self.task


def prompt(text: str = "Hi", **fields: Any) -> dict[str, Any]:
    return {"type": "prompt", "prompt": text, **fields}


async def test_a_prompt_streams_its_turn_with_audio_as_binary_frames() -> None:
    script = Script()
    async with Socket(script) as socket:
        client = socket.client
        client.say(prompt("Hi", voice="jf_alpha"))
        end = await client.wait_for("turn.end")
    assert client.frames[0] == {
        "type": "ready",
        "conversation": "c1",
        "sample_rate": 24000,
        "audio_header_bytes": 4,
        "max_message_bytes": 32768,
    }
    assert client.kinds(stop=end + 1) == [
        *("ready", "turn.start", "text.delta"),
        *["<audio>"] * 3,
        "turn.end",
    ]
    audio = [split_audio_frame(f) for f in client.frames if isinstance(f, bytes)]
    assert audio == [(0, AUDIO), (1, AUDIO), (2, AUDIO)]
    assert script.requests == [TurnRequest("Hi", voice=parse_voice("jf_alpha"))]
    assert script.conversations == ["c1"]  # the socket's conversation, every turn


async def test_json_in_a_binary_frame_is_a_message_like_any_other() -> None:
    script = Script(segments=0)
    async with Socket(script) as socket:
        socket.client.say(prompt("In bytes"), binary=True)
        await socket.client.wait_for("turn.end")
    assert script.requests == [TurnRequest("In bytes")]


async def test_cancel_stops_the_running_turn_and_names_it() -> None:
    script = Script(segments=50, pace_s=0.05)
    async with Socket(script) as socket:
        client = await socket.reply("turn.start")
        client.say({"type": "cancel"})
        cancelled = await client.wait_for("cancelled")
        client.say({"type": "cancel"})  # nothing runs now
        await client.wait_for("cancelled", 2)
    assert client.of_type("cancelled") == [
        {"type": "cancelled", "turn_id": "t1"},
        {"type": "cancelled", "turn_id": None},
    ]
    assert client.kinds(cancelled + 1) == ["cancelled"]  # nothing of the turn after it
    assert script.closed == ["t1"]


async def test_a_cancel_after_turn_end_names_no_turn() -> None:
    async with Socket(Script(segments=1, linger_s=1.0)) as socket:
        client = await socket.reply("turn.end")
        client.say({"type": "cancel"})
        await client.wait_for("cancelled")
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": None}]


async def test_a_new_prompt_supersedes_the_turn_whose_events_end_first() -> None:
    script = Script(segments=50, pace_s=0.05)
    async with Socket(script) as socket:
        client = socket.client
        client.say(prompt("one"))
        await client.wait_for("turn.start")
        client.say(prompt("two"))
        await client.wait_for("turn.start", 2)
    order = [kind for kind in client.kinds() if kind != "<audio>"]
    assert order[:5] == ["ready", "turn.start", "text.delta", "turn.end", "turn.start"]
    assert [s["turn_id"] for s in client.of_type("turn.start")] == ["t1", "t2"]
    assert [r.prompt for r in script.requests] == ["one", "two"]


async def test_config_sets_and_unsets_the_defaults_of_later_prompts() -> None:
    script = Script(segments=0)
    async with Socket(script) as socket:
        client = socket.client
        client.say({"type": "config", "voice": "jm_kumo", "speed": 1.2})
        await client.wait_for("config")
        client.say({"type": "config", "speed": None, "marks": True})
        await client.wait_for("config", 2)
        client.say(prompt("Hi", voice="jf_alpha"))  # a prompt's own field wins
        await client.wait_for("turn.end")
    assert client.of_type("config") == [
        {"type": "config", "voice": "jm_kumo", "speed": 1.2},
        {"type": "config", "voice": "jm_kumo", "marks": True},
    ]
    assert script.requests == [TurnRequest("Hi", voice=parse_voice("jf_alpha"), marks=True)]


async def test_a_config_with_an_unknown_voice_is_refused_at_once_and_the_last_one_kept() -> None:
    script = Script(segments=0)
    async with Socket(script) as socket:
        client = socket.client
        client.say({"type": "config", "voice": "jm_kumo", "speed": 1.2})
        await client.wait_for("config")
        client.say({"type": "config", "voice": "nobody", "speed": 1.5})
        await client.wait_for("error")
        client.say({"type": "config", "marks": True})
        await client.wait_for("config", 2)
        client.say(prompt("Hi"))
        client.say({"type": "config", "voice": "nova"})  # OpenAI's name: the voice it stands for
        client.say(prompt("Again"))
        await client.wait_for("turn.end", 2)
    error = client.of_type("error")[0]
    assert (error["code"], error["in_reply_to"]) == ("unknown_voice", "config")
    assert client.of_type("config")[1] == {
        "type": "config",
        "voice": "jm_kumo",
        "speed": 1.2,
        "marks": True,
    }
    assert script.requests[0] == TurnRequest(
        "Hi", voice=parse_voice("jm_kumo"), speed=1.2, marks=True
    )
    assert script.requests[1].voice == parse_voice("jf_alpha")


async def test_a_heard_report_goes_with_the_next_prompt_only() -> None:
    script = Script(segments=0)
    heard = {"turn_id": "t0", "seq": 2, "ms": 850.0}
    async with Socket(script) as socket:
        client = socket.client
        client.say({"type": "heard", **heard})
        client.say(prompt("one"))
        await client.wait_for("turn.end")
        client.say(prompt("two"))
        await client.wait_for("turn.end", 2)
        client.say({"type": "heard", **heard})
        client.say(prompt("three", heard={"turn_id": "t2", "seq": 0, "ms": 10}))
        await client.wait_for("turn.end", 3)
    assert script.requests[0] == TurnRequest("one", heard=PlaybackReport("t0", 2, 850.0))
    assert script.requests[1] == TurnRequest("two")
    assert script.requests[2].heard == PlaybackReport("t2", 0, 10.0)  # its own


@pytest.mark.parametrize(
    ("message", "code", "in_reply_to"),
    [
        ({"type": "cancel", "turn_id": "t1"}, "unknown_field", "cancel"),
        ({"type": "config", "speed": 9}, "invalid_config", "config"),
        ({"type": "heard", "turn_id": "t1", "seq": -1, "ms": 0}, "invalid_heard", "heard"),
        ({"type": "heard", "turn_id": "t1", "seq": 0, "ms": 0, "x": 1}, "unknown_field", "heard"),
        ({"type": "dance"}, "unknown_type", None),
        (prompt("refuse me"), "invalid_voice", "prompt"),
        ({"type": "listen", "mode": "hands_free"}, "listening_unavailable", "listen"),
        ({"type": "talk.start"}, "listening_unavailable", "talk.start"),
    ],
)
async def test_a_bad_message_is_refused_by_type_and_the_socket_keeps_serving(
    message: dict[str, Any], code: str, in_reply_to: str | None
) -> None:
    script = Script(segments=0)
    async with Socket(script) as socket:
        client = socket.client
        client.say(message)
        await client.wait_for("error")
        client.say(prompt("still here"))
        await client.wait_for("turn.end")
    error = client.of_type("error")[0]
    assert (error["code"], error["in_reply_to"]) == (code, in_reply_to)
    assert error["message"]
    if code == "listening_unavailable":
        assert error["message"] == "this server does not listen"
    assert socket.errors == [code]
    assert script.requests[-1] == TurnRequest("still here")


async def test_audio_before_listen_is_refused_and_nothing_is_kept() -> None:
    async with Socket(Script(), recognizer=Recognizes()) as socket:
        client = socket.client
        client.say(MIC_MAGIC + AUDIO[:640])
        await client.wait_for("error")
    error = client.of_type("error")[0]
    assert (error["code"], error["in_reply_to"]) == ("not_listening", "audio")
    assert error["message"] == "audio before 'listen'; send 'listen' first"


async def test_an_idle_socket_is_told_then_closed_normally() -> None:
    async with Socket(Script(), idle_s=0.2) as socket:
        await socket.client.wait_for("error")
        assert socket.task is not None
        async with asyncio.timeout(WAIT_S):
            await socket.task
    assert socket.client.of_type("error")[0]["code"] == "idle_timeout"
    assert socket.client.of_type("error")[0]["message"] == "no use for 0.2 s"
    assert socket.client.closed == (IDLE_CLOSE, "idle_timeout")
    assert socket.errors == ["idle_timeout"]


async def test_a_turn_longer_than_the_idle_time_is_not_cut_and_idle_counts_from_its_end() -> None:
    # 0.5 s of turn, not a multiple of the idle time: idle counted from the prompt would end
    # the socket at 0.6 s, 0.1 s after the turn; counted from the turn's end, 0.3 s after it.
    async with Socket(Script(segments=5, pace_s=0.1), idle_s=0.3) as socket:
        client = socket.client
        client.say(prompt())
        end = await client.wait_for("turn.end")
        error = await client.wait_for("error")
    assert client.kinds(stop=end + 1).count("<audio>") == 5
    assert 0.25 <= client.times[error] - client.times[end] <= 0.45  # from the turn's end: 0.3 s
    assert client.kinds(end + 1) == ["error"] and client.closed == (IDLE_CLOSE, "idle_timeout")


async def test_a_client_that_hangs_up_mid_turn_ends_the_socket_and_its_turn_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = Script(segments=50, pace_s=0.05)
    with caplog.at_level(logging.INFO, logger="agent.ws"):
        async with Socket(script) as socket:
            socket.client.say(prompt())
            await socket.client.wait_for("<audio>")
            socket.client.hang_up()
            assert socket.task is not None
            async with asyncio.timeout(WAIT_S):
                await socket.task
    assert script.closed == ["t1"] and not caplog.records


async def test_a_turn_that_fails_in_its_relay_is_logged_and_the_socket_keeps_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = Script(segments=2)
    script.failing.add("t1")
    with caplog.at_level(logging.INFO, logger="agent.ws"):
        async with Socket(script) as socket:
            client = socket.client
            client.say(prompt("one"))
            await client.wait_for("text.delta")
            await asyncio.sleep(0.1)  # its relay has failed by now
            client.say({"type": "cancel"})
            await client.wait_for("cancelled")
            client.say(prompt("two"))
            await client.wait_for("turn.end")
    messages = [r.getMessage() for r in caplog.records if r.name == "agent.ws"]
    assert messages == ["a turn's relay ended early: RuntimeError: the model went away"]
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": None}]  # over
    assert [r.prompt for r in script.requests] == ["one", "two"]


# --- push-to-talk, with a recognizer that answers at once ---------------------------------


async def test_push_to_talk_cuts_the_turn_at_the_press_and_its_words_are_the_next_prompt() -> None:
    script, recognizer = Script(segments=50, pace_s=0.05), Recognizes()
    async with Socket(script, recognizer=recognizer) as socket:
        client = socket.client
        client.say({"type": "listen", "mode": "push_to_talk"})
        await client.wait_for("listening")
        client.say(prompt("Talk a while"))
        await client.wait_for("<audio>")
        client.say({"type": "talk.start"})
        cancelled = await client.wait_for("cancelled")
        for _ in range(10):  # 320 ms of speech
            client.say(MIC_MAGIC + AUDIO[:1024])
        client.say({"type": "talk.end"})
        await client.wait_for("turn.start", 2)
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": "t1"}]
    assert client.kinds(cancelled - 1, cancelled + 1) == ["speech.start", "cancelled"]
    order = [k for k in client.kinds(cancelled) if k != "<audio>"]
    assert order[:4] == ["cancelled", "speech.end", "transcript", "turn.start"]
    transcript = client.of_type("transcript")[0]
    assert transcript == {
        "type": "transcript",
        "text": "What time is it?",
        "audio_ms": 320.0,
        "asr_ms": 12.5,
        "final": True,
        "backchannel": False,
    }
    assert recognizer.heard == [AUDIO[:1024] * 10]
    assert script.requests[-1] == TurnRequest("What time is it?")
    assert socket.heard == ["speech.start", "speech.end", "transcript"]


async def test_a_press_after_turn_end_while_its_audio_still_plays_cancels_that_turn() -> None:
    script = Script(segments=30)  # 3 s of audio, sent at once: the page plays it for 3 s
    async with Socket(script, recognizer=Recognizes()) as socket:
        client = socket.client
        await client.press_in_a_turn("turn.end")
        await client.wait_for("cancelled")
        client.say({"type": "talk.start"})  # twice without talk.end
        await client.wait_for("error")
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": "t1"}]
    assert client.of_type("error")[0]["code"] == "already_talking"


async def test_a_failed_recognition_is_an_error_and_the_conversation_goes_on() -> None:
    script, recognizer = Script(segments=0), Recognizes()
    recognizer.fail = True
    async with Socket(script, recognizer=recognizer) as socket:
        client = socket.client
        client.say({"type": "listen", "mode": "push_to_talk"})
        client.talk(6)  # 192 ms
        await client.wait_for("error")
        recognizer.fail, recognizer.text = False, ""  # nothing said: no turn
        client.talk(6)  # 192 ms
        await client.wait_for("transcript")
        client.say(prompt("typed"))
        await client.wait_for("turn.end")
    error = client.of_type("error")[0]
    assert (error["code"], error["message"]) == ("asr_failed", "recognition failed: injected")
    assert socket.errors == ["asr_failed"]
    assert script.requests == [TurnRequest("typed")]


async def test_listen_stop_says_so_and_a_talk_end_without_a_press_is_refused() -> None:
    async with Socket(Script(), recognizer=Recognizes()) as socket:
        client = socket.client
        client.say({"type": "listen", "mode": "push_to_talk", "sample_rate": 16000})
        await client.wait_for("listening")
        client.say({"type": "talk.end"})
        await client.wait_for("error")
        client.say({"type": "listen.stop"})
        await client.wait_for("listening", 2)
        client.say({"type": "talk.start"})
        await client.wait_for("error", 2)
    first, stopped = client.of_type("listening")
    assert (first["mode"], stopped["mode"]) == ("push_to_talk", None)
    assert [e["code"] for e in client.of_type("error")] == ["not_talking", "not_listening"]
    assert client.of_type("error")[1]["message"] == (
        "talk.start before 'listen'; send 'listen' first"
    )


async def test_a_cancel_while_a_new_turn_is_set_up_names_no_turn() -> None:
    async with Socket(Script(segments=1, first_event_s=0.5)) as socket:
        client = socket.client
        client.say(prompt())
        client.say({"type": "cancel"})  # before the turn's turn.start
        await client.wait_for("cancelled")
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": None}]


async def test_a_press_before_the_turns_first_audio_cancels_it_by_name() -> None:
    script = Script(segments=5, pace_s=1.0)  # turn.start now, its first audio after 1 s
    async with Socket(script, recognizer=Recognizes()) as socket:
        client = socket.client
        await client.press_in_a_turn("text.delta")
        await client.wait_for("cancelled")
        for _ in range(6):
            client.say(MIC_MAGIC + AUDIO[:1024])
        client.say({"type": "talk.end"})
        await started(script, 2)
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": "t1"}]
    assert socket.withdrawn == [("t1", "c1")]  # cut: settled as the words' turn starts


async def test_a_press_once_the_reply_has_played_cancels_nothing() -> None:
    async with Socket(Script(segments=1), recognizer=Recognizes()) as socket:  # 100 ms of audio
        client = socket.client
        await client.press_in_a_turn("turn.end", 0.3)  # the page has played it all
        await client.wait_for("speech.start")
        client.say({"type": "cancel"})  # a marker: everything before it has been answered
        await client.wait_for("cancelled")
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": None}]


async def test_an_utterance_over_the_cap_is_an_error_told_to_the_metrics() -> None:
    config = replace(FAST_CLIENT, max_utterance_s=0.2)
    async with Socket(Script(segments=0), recognizer=Recognizes(), listening=config) as socket:
        client = socket.client
        client.say({"type": "listen", "mode": "push_to_talk"})
        client.talk(8, release=False)  # 256 ms, over the cap
        await client.wait_for("transcript")
    error = client.of_type("error")[0]
    assert error["code"] == "utterance_too_long"
    assert socket.errors == ["utterance_too_long"]
    assert "error" not in socket.heard


async def test_a_transcript_the_turn_refuses_is_refused_in_reply_to_it() -> None:
    recognizer = Recognizes()
    recognizer.text = "refuse me"  # the script's turn refuses this prompt
    async with Socket(Script(), recognizer=recognizer) as socket:
        client = socket.client
        client.say({"type": "listen", "mode": "push_to_talk"})
        client.talk(6)
        await client.wait_for("error")
    error = client.of_type("error")[0]
    assert (error["code"], error["in_reply_to"]) == ("invalid_voice", "transcript")
    assert error["message"] == "no such voice" and socket.errors == ["invalid_voice"]


async def test_a_recognizer_that_cannot_load_refuses_listen_with_its_reason() -> None:
    recognizer = Recognizes()
    recognizer.unloadable = True
    async with Socket(Script(), recognizer=recognizer) as socket:
        socket.client.say({"type": "listen", "mode": "push_to_talk"})
        await socket.client.wait_for("error")
    error = socket.client.of_type("error")[0]
    assert (error["code"], error["in_reply_to"]) == ("asr_unavailable", "listen")
    assert error["message"] == "the Whisper model did not load: no such folder"


async def test_an_install_without_the_vad_refuses_listen_as_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_vad(*_: object, **__: object) -> None:
        raise ImportError("No module named 'onnxruntime'")

    monkeypatch.setattr("agent.leg.voice_input.Listener", no_vad)
    async with Socket(Script(), recognizer=Recognizes()) as socket:
        socket.client.say({"type": "listen", "mode": "hands_free"})
        await socket.client.wait_for("error")
    error = socket.client.of_type("error")[0]
    assert (error["code"], error["in_reply_to"]) == ("listening_unavailable", "listen")
    assert error["message"] == "no VAD here: No module named 'onnxruntime'"


# --- the module's functions ----------------------------------------------------------------


def websocket_with(headers: list[tuple[bytes, bytes]], query: bytes = b"") -> WebSocket:
    scope = {"type": "websocket", "path": "/ws", "headers": headers, "query_string": query}
    return WebSocket(scope, Client().receive, Client().send)


def test_the_conversation_is_the_session_header_then_the_query_parameter_then_default() -> None:
    header = SESSION_HEADER.lower().encode()
    query = f"{SESSION_HEADER}=from-query".encode()
    assert conversation_of(websocket_with([(header, b"from-header")], query)) == "from-header"
    assert conversation_of(websocket_with([], query)) == "from-query"
    assert conversation_of(websocket_with([])) == "default"


async def test_a_press_after_the_reply_played_while_its_turn_winds_up_names_no_turn() -> None:
    # turn.end is out and its 100 ms of audio played; the turn's task has not returned yet
    async with Socket(Script(segments=1, linger_s=2.0), recognizer=Recognizes()) as socket:
        client = socket.client
        await client.press_in_a_turn("turn.end", 0.3)
        await client.wait_for("cancelled")
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": None}]


# --- hands-free: the real VAD on the project's own speech ----------------------------------


async def test_speech_over_a_running_turn_cuts_it_hands_free(engine: Engine) -> None:
    pcm = await asyncio.to_thread(spoken, engine, "Stop talking and tell me the time.")
    script = Script(segments=100, pace_s=0.05)
    async with Socket(script, recognizer=Recognizes()) as socket:
        client = await socket.reply(listen="hands_free")
        for frame in mic_frames(silence(300) + pcm + silence(800)):
            client.say(frame)
        await client.wait_for("turn.start", 2)
    order = [k for k in client.kinds() if k != "<audio>"]
    cancelled = order.index("cancelled")
    # Paused at once, cut while the user still speaks (the interrupt bound: 1 s of speech).
    assert order[cancelled - 2 : cancelled] == ["speech.start", "reply.paused"]
    assert order[cancelled + 1 :][:3] == ["speech.end", "transcript", "turn.start"]
    assert client.of_type("reply.paused") == [{"type": "reply.paused", "turn_id": "t1"}]
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": "t1"}]


async def test_a_connection_that_drops_mid_turn_ends_the_socket_without_an_exception() -> None:
    script = Script(segments=100, pace_s=0.05)
    async with Socket(script) as socket:
        client = await socket.reply()
        client.broken = True  # the next send fails, in the turn's relay or the socket's own
        client.say({"type": "config", "speed": 1.1})
        assert socket.task is not None
        async with asyncio.timeout(WAIT_S):
            await socket.task  # returns: a dropped client is a normal end
    assert script.closed == ["t1"]


# --- the eager start: a reply begun while an unfinished turn waits, heard only if it ends ---


@pytest.fixture(scope="module")
def paused(engine: Engine) -> bytes:
    """A question said by the project's TTS (the turn's model is scripted: any would do)."""
    return spoken(engine, "Could you book a table for four people tonight?")


async def started(script: Script, count: int) -> None:
    async with asyncio.timeout(WAIT_S):
        while len(script.requests) < count:
            await asyncio.sleep(0.01)


async def test_a_reply_started_at_an_unfinished_pause_is_withdrawn_unheard_when_speech_resumes(
    paused: bytes,
) -> None:
    pcm = paused
    at = int(len(pcm) // 2 * 0.6) * 2  # "Could you book a table for f…"
    script, recognizer = Script(segments=100, pace_s=0.05), Recognizes()
    judge = Judges(0.1, 0.1, 0.9)  # unfinished at both asks in the sentence, complete at its end
    async with Socket(script, recognizer=recognizer, judge=judge) as socket:
        client = socket.client
        client.say({"type": "listen", "mode": "hands_free"})
        for frame in mic_frames(silence(300) + pcm[:at] + silence(600)):
            client.say(frame)
        await started(script, 1)  # the guess runs: its LLM and audio, held
        assert client.kinds() == ["ready", "listening", "speech.start"]
        for frame in mic_frames(pcm[at:] + silence(1200)):
            client.say(frame)
        await client.wait_for("text.delta")
    assert socket.withdrawn == [("t1", "c1")] and script.closed[0] == "t1"
    kinds = [k for k in client.kinds() if k != "<audio>"]
    assert kinds[:6] == [
        "ready",
        "listening",
        "speech.start",
        "speech.end",
        "transcript",
        "turn.start",
    ]
    assert "cancelled" not in kinds  # the held reply was not speaking: no barge-in on it
    assert client.of_type("turn.start")[0]["turn_id"] == "t2"  # nothing of t1 was sent
    assert client.of_type("speech.end")[0]["turn"] == "complete" and judge.asked == 3
    assert len(recognizer.heard) == 2  # the eager one at the unfinished pause, dropped; the end's


async def one_hands_free_turn(socket: Socket, pcm: bytes) -> dict[str, Any]:
    """``pcm`` said hands-free into ``socket``, to its turn's end: its ``speech.end``."""
    async with socket:
        client = socket.client
        client.say({"type": "listen", "mode": "hands_free"})
        for frame in mic_frames(silence(300) + pcm + silence(600)):
            client.say(frame)
        await client.wait_for("turn.end")
    return client.of_type("speech.end")[0]


async def test_a_pause_called_complete_is_recognized_after_the_model_decides(paused: bytes) -> None:
    """Nothing competes with the model for the cores: recognition begins once it has said
    complete (eager recognition only fills a wait)."""
    script, recognizer = Script(segments=1), Recognizes()
    judge = Judges(0.9, recognizer=recognizer)
    end = await one_hands_free_turn(Socket(script, recognizer=recognizer, judge=judge), paused)
    assert (end["turn"], end["wait_ms"]) == ("complete", 160)
    assert judge.heard_before == [0] and len(recognizer.heard) == 1


async def test_a_pause_the_second_ask_calls_complete_ends_there_with_nothing_begun_early(
    paused: bytes,
) -> None:
    script, recognizer = Script(segments=1), Recognizes()
    judge = Judges(0.1, 0.9, recognizer=recognizer)  # unfinished at 160 ms, sure at 224 ms
    socket = Socket(script, recognizer=recognizer, judge=judge)
    end = await one_hands_free_turn(socket, paused)
    assert (end["turn"], end["turn_score"], end["wait_ms"]) == ("complete", 0.9, 224)
    assert judge.heard_before == [0, 0] and len(recognizer.heard) == 1
    assert socket.withdrawn == [] and len(script.requests) == 1


async def test_a_reply_started_at_an_unfinished_pause_is_heard_once_the_turn_ends_there(
    paused: bytes,
) -> None:
    pcm = paused
    script, recognizer = Script(segments=3), Recognizes()
    async with Socket(script, recognizer=recognizer, judge=Judges(0.1)) as socket:
        client = socket.client
        client.say({"type": "listen", "mode": "hands_free"})
        for frame in mic_frames(silence(300) + pcm + silence(1200)):
            client.say(frame)
        await client.wait_for("turn.end")
    assert client.kinds() == [
        "ready",
        "listening",
        "speech.start",
        "speech.end",
        "transcript",
        "turn.start",
        "text.delta",
        "<audio>",
        "<audio>",
        "<audio>",
        "turn.end",
    ]
    end = client.of_type("speech.end")[0]
    assert (end["turn"], end["wait_ms"]) == ("incomplete", 1024)  # the full wait, then the end
    assert len(script.requests) == 1 and script.requests[0].prompt == recognizer.text
    assert script.started_at[0] < client.times[client.kinds().index("speech.end")]  # begun early
    assert socket.withdrawn == [] and len(recognizer.heard) == 1  # one recognition, used


@pytest.mark.parametrize(
    ("message", "then"),
    [
        (prompt("Something else"), ["turn.start", "text.delta"]),  # t2: t1 was never sent
        ({"type": "listen.stop"}, ["speech.end", "listening"]),
    ],
)
async def test_a_message_from_the_user_withdraws_a_held_reply(
    paused: bytes, message: dict[str, Any], then: list[str]
) -> None:
    script = Script(segments=100, pace_s=0.05)
    async with Socket(script, recognizer=Recognizes(), judge=Judges(0.1)) as socket:
        client = socket.client
        client.say({"type": "listen", "mode": "hands_free"})
        for frame in mic_frames(silence(300) + paused + silence(300)):  # paused, still waiting
            client.say(frame)
        await started(script, 1)
        client.say(message)
        await client.wait_for(then[-1], then.count("listening") + 1)
    assert socket.withdrawn == [("t1", "c1")] and script.closed[0] == "t1"
    assert client.kinds()[: 3 + len(then)] == ["ready", "listening", "speech.start", *then]
    assert [t["turn_id"] for t in client.of_type("turn.start")] in ([], ["t2"])


async def test_a_withdrawal_that_fails_is_logged_and_the_socket_serves_on(
    paused: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    script = Script(segments=100, pace_s=0.05)
    async with Socket(script, recognizer=Recognizes(), judge=Judges(0.1)) as socket:
        socket.withdraw_error = RuntimeError("the conversation went away")
        client = socket.client
        client.say({"type": "listen", "mode": "hands_free"})
        for frame in mic_frames(silence(300) + paused + silence(300)):
            client.say(frame)
        await started(script, 1)
        with caplog.at_level(logging.ERROR, "agent.ws"):
            client.say(prompt("Something else"))
            await client.wait_for("text.delta")
    assert [(r.getMessage(), r.exc_info is not None) for r in caplog.records] == [
        ("withdrawing turn t1 failed", True)
    ]
    assert [t["turn_id"] for t in client.of_type("turn.start")] == ["t2"]


# --- hands-free over a VAD that hears any sound: the paused reply and the turn model -------

LOUD = MIC_MAGIC + b"\x10\x10" * 512  # 32 ms of sound
QUIET = MIC_MAGIC + b"\x00\x00" * 512  # 32 ms of silence


@pytest.fixture
def loud_is_speech(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agent.listening.listener.VoiceActivity", LoudIsSpeech)


def say_over(client: Client, loud_ms: int, quiet_ms: int = 0) -> None:
    """Sound for ``loud_ms``, then silence for ``quiet_ms``, hands-free."""
    for frame in [LOUD] * (loud_ms // 32) + [QUIET] * (quiet_ms // 32):
        client.say(frame)


async def test_speech_over_the_reply_pauses_it_and_no_words_by_the_bound_play_it_on(
    loud_is_speech: None,
) -> None:
    script = Script(segments=100, pace_s=0.05)
    listening = replace(FAST_CLIENT, resume_ms=300)
    async with Socket(script, recognizer=Recognizes(), listening=listening) as socket:
        client = await socket.reply(listen="hands_free")
        say_over(client, 640)  # over the barge-in bound, under the interrupt bound, still on
        paused = await client.wait_for("reply.paused")
        client.say({"type": "heard", "turn_id": "t1", "seq": 2, "ms": 40.0})  # where it paused
        resumed = await client.wait_for("reply.resumed")  # no words came: at the bound
        audio = client.kinds().count("<audio>")
        await client.wait_for("<audio>", audio + 1)  # the turn speaks on
        assert "cancelled" not in client.kinds() and len(script.requests) == 1
        client.say(prompt("Next"))
        await started(script, 2)
    assert client.frames[paused] == {"type": "reply.paused", "turn_id": "t1"}
    assert client.frames[resumed] == {"type": "reply.resumed", "turn_id": "t1"}
    assert client.times[resumed] - client.times[paused] >= 0.3
    assert script.requests[1] == TurnRequest("Next")  # the pause's report is moot: it played on


async def test_a_turn_model_that_fails_is_logged_and_the_silence_rule_ends_the_turn(
    loud_is_speech: None, caplog: pytest.LogCaptureFixture
) -> None:
    script, recognizer, judge = Script(segments=1), Recognizes(), Judges(0.9)
    judge.error = TurnModelError("the turn model went away")
    with caplog.at_level(logging.WARNING, logger="agent.ws"):
        async with Socket(script, recognizer=recognizer, judge=judge) as socket:
            client = socket.client
            client.say({"type": "listen", "mode": "hands_free"})
            say_over(client, 320, 1600)
            await client.wait_for("turn.end")
    assert [r.getMessage() for r in caplog.records] == [
        "the turn model failed: the turn model went away"
    ]
    assert len(judge.pcm) == 1 and LOUD[len(MIC_MAGIC) :] * 10 in judge.pcm[0]  # so far
    end = client.of_type("speech.end")[0]
    assert (end["reason"], end["turn"], end["wait_ms"]) == ("silence", None, 512)
    assert script.requests == [TurnRequest(recognizer.text)]


async def test_an_unfinished_pause_over_a_paused_reply_is_read_early_as_murmurs_begun_on_nothing(
    loud_is_speech: None,
) -> None:
    script, recognizer = Script(segments=100, pace_s=0.05), Recognizes()
    async with Socket(script, recognizer=recognizer, judge=Judges(0.1)) as socket:
        client = await socket.reply(listen="hands_free")
        say_over(client, 640, 256)  # pauses the reply, then a pause the model calls unfinished
        await client.wait_for("reply.paused")
        async with asyncio.timeout(WAIT_S):
            while not recognizer.heard:  # the eager recognition
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        assert len(script.requests) == 1  # no reply begun early over the paused one
    assert recognizer.murmurs == [True] and LOUD[len(MIC_MAGIC) :] * 20 in recognizer.heard[0]


@pytest.mark.parametrize("error", [None, TurnModelError("the turn model went away")])
async def test_no_reply_begins_early_with_the_eager_start_off_or_without_the_models_answer(
    loud_is_speech: None, error: TurnModelError | None
) -> None:
    script, recognizer, judge = Script(segments=1), Recognizes(), Judges(0.1)
    judge.error = error
    listening = replace(FAST_CLIENT, eager_start=error is not None)
    async with Socket(script, recognizer=recognizer, judge=judge, listening=listening) as socket:
        client = socket.client
        client.say({"type": "listen", "mode": "hands_free"})
        say_over(client, 320, 1600)
        await client.wait_for("turn.end")
    ended = client.times[client.kinds().index("speech.end")]
    assert len(script.requests) == 1 and script.started_at[0] >= ended  # begun at the end
    assert len(recognizer.heard) == 1  # the one begun at the pause, used


async def test_a_reply_cut_by_speech_is_settled_by_the_pages_report_when_one_begins_early(
    loud_is_speech: None,
) -> None:
    script, recognizer = Script(segments=100, pace_s=0.05), Recognizes()
    async with Socket(script, recognizer=recognizer, judge=Judges(0.1)) as socket:
        client = await socket.reply(listen="hands_free")
        say_over(client, 1088)  # past the interrupt bound: cut without waiting for the words
        await client.wait_for("cancelled")
        client.say({"type": "heard", "turn_id": "t1", "seq": 0, "ms": 40.0})
        say_over(client, 0, 256)  # a pause the model calls unfinished: a reply begins early
        await started(script, 2)
        assert socket.withdrawn == [("t1", "c1")]  # settled as the held reply started
        assert socket.reports == [PlaybackReport("t1", 0, 40.0)]


async def test_words_over_a_paused_reply_are_recognized_as_ones_that_may_murmur(
    loud_is_speech: None,
) -> None:
    script, recognizer = Script(segments=100, pace_s=0.05), Recognizes()
    recognizer.text = "Mm-hmm."
    async with Socket(script, recognizer=recognizer) as socket:  # no turn model: no eager one
        client = await socket.reply(listen="hands_free")
        say_over(client, 640, 800)
        await client.wait_for("reply.resumed")  # a murmur: the reply plays on
        recognizer.text = "Wait."
        say_over(client, 640, 800)
        await client.wait_for("turn.start", 2)
    assert "turn.end" not in client.kinds()  # the reply was cut, not ended by the next turn
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": "t1"}]
    assert recognizer.murmurs == [True, True]
    assert [t["backchannel"] for t in client.of_type("transcript")] == [True, False]
    assert [r.prompt for r in script.requests] == ["Hi", "Wait."]


async def test_a_failed_recognition_over_a_paused_reply_plays_it_on(loud_is_speech: None) -> None:
    script, recognizer = Script(segments=100, pace_s=0.05), Recognizes()
    recognizer.fail = True
    async with Socket(script, recognizer=recognizer) as socket:
        client = await socket.reply(listen="hands_free")
        say_over(client, 640, 800)
        await client.wait_for("reply.resumed")
    kinds = client.kinds()
    assert kinds.index("reply.paused") < kinds.index("error") < kinds.index("reply.resumed")
    assert client.of_type("reply.resumed") == [{"type": "reply.resumed", "turn_id": "t1"}]
    assert "cancelled" not in kinds and len(script.requests) == 1


async def test_a_reply_cut_by_speech_is_settled_by_the_pages_report_when_the_words_start_a_turn(
    loud_is_speech: None,
) -> None:
    script, recognizer = Script(segments=100, pace_s=0.05), Recognizes()
    async with Socket(script, recognizer=recognizer) as socket:
        client = await socket.reply(listen="hands_free")
        say_over(client, 1088)  # past the interrupt bound: cut without waiting for the words
        await client.wait_for("cancelled")
        client.say({"type": "heard", "turn_id": "t1", "seq": 0, "ms": 40.0})
        say_over(client, 0, 800)
        await started(script, 2)
    assert socket.withdrawn == [("t1", "c1")] and socket.reports == [PlaybackReport("t1", 0, 40.0)]
    assert script.requests[1].prompt == recognizer.text


async def test_speech_over_an_ended_turns_audio_cuts_it_and_settles_it_with_the_words_turn(
    loud_is_speech: None,
) -> None:
    script, recognizer = Script(segments=30), Recognizes()  # 3 s of audio, sent at once
    async with Socket(script, recognizer=recognizer) as socket:
        client = await socket.reply("turn.end", listen="hands_free")  # its audio still plays
        say_over(client, 1088, 800)
        await started(script, 2)
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": "t1"}]
    assert socket.withdrawn == [("t1", "c1")]


async def test_speech_over_a_turn_before_its_first_audio_cuts_it_by_name(
    loud_is_speech: None,
) -> None:
    script, recognizer = Script(segments=5, pace_s=2.0), Recognizes()  # its audio after 2 s
    async with Socket(script, recognizer=recognizer) as socket:
        client = await socket.reply("text.delta", listen="hands_free")
        say_over(client, 1088, 800)
        await started(script, 2)
    assert client.of_type("reply.paused") == [{"type": "reply.paused", "turn_id": "t1"}]
    assert client.of_type("cancelled") == [{"type": "cancelled", "turn_id": "t1"}]
    assert socket.withdrawn == [("t1", "c1")]


@pytest.mark.parametrize(
    ("message", "mode"),
    [({"type": "listen", "mode": "push_to_talk"}, "push_to_talk"), ({"type": "listen.stop"}, None)],
)
async def test_listening_anew_or_no_more_plays_a_paused_reply_on(
    loud_is_speech: None, message: dict[str, Any], mode: str | None
) -> None:
    script = Script(segments=100, pace_s=0.05)
    async with Socket(script, recognizer=Recognizes()) as socket:
        client = await socket.reply(listen="hands_free")
        say_over(client, 640)
        await client.wait_for("reply.paused")
        client.say(message)  # no words will come for the pause
        await client.wait_for("reply.resumed")
        await client.wait_for("listening", 2)
        audio = client.kinds().count("<audio>")
        await client.wait_for("<audio>", audio + 1)  # the turn speaks on
    assert client.of_type("listening")[1]["mode"] == mode
    assert client.of_type("reply.resumed") == [{"type": "reply.resumed", "turn_id": "t1"}]
    kinds = client.kinds()
    listening_again = [i for i, kind in enumerate(kinds) if kind == "listening"][1]
    assert kinds.index("reply.resumed") < listening_again  # at once, not at the resume bound


async def test_a_withdrawn_replys_prompt_leads_the_next_spoken_turn_only() -> None:
    script, recognizer = Script(segments=1, pace_s=0.5), Recognizes()  # audio after 0.5 s
    async with Socket(script, recognizer=recognizer) as socket:
        socket.carried = ["Tell me about otters."]
        client = socket.client
        await client.press_in_a_turn("text.delta")  # over t1 before its audio: cut
        recognizer.text = "And seals."
        for _ in range(6):
            client.say(MIC_MAGIC + AUDIO[:1024])
        client.say({"type": "talk.end"})
        await client.wait_for("turn.end")  # t2's
        await asyncio.sleep(0.3)  # its audio played out: the next press cuts nothing
        recognizer.text = "What about whales?"
        client.talk(6)
        await started(script, 3)
    assert client.of_type("turn.withdrawn") == [
        {"type": "turn.withdrawn", "turn_id": "t1", "prompt": "Tell me about otters."}
    ]
    prompts = [r.prompt for r in script.requests]
    assert prompts == ["Hi", "Tell me about otters. And seals.", "What about whales?"]


async def test_a_cancelled_turns_audio_is_no_longer_spoken_over(loud_is_speech: None) -> None:
    script, recognizer = Script(segments=30), Recognizes()  # 3 s of audio, sent at once
    async with Socket(script, recognizer=recognizer) as socket:
        client = await socket.reply(listen="hands_free")
        client.say({"type": "cancel"})
        await client.wait_for("cancelled")  # the page stops playing it
        say_over(client, 640, 800)
        await started(script, 2)
    assert "reply.paused" not in client.kinds()  # nothing left to pause: the words start a turn
    assert len(client.of_type("cancelled")) == 1
