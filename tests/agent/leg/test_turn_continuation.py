"""Turn continuation over real ``/ws`` sockets, on both front doors (issue 49, deliverable 2).

The user asks, the agent starts a reply, and the user goes on speaking before a word of it was
heard: the reply is withdrawn (no assistant turn, no "cut off" note) and the two utterances are
one user turn in the history that the next LLM request carries. Heard in part, the reply keeps
what was heard, as ever. The speech is the project's own TTS, the recognizer the real Whisper,
the TTS server the real one, the LLM the demo model, whose requests are recorded as it gets them.
First, ``Continuation`` itself (no socket): what it asks the withdrawal hook, when, and what it
carries into the next prompt.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from agent.core.memory import INTERRUPTED_NOTE
from agent.events import Event, TurnWithdrawn
from agent.leg.continuation import Continuation
from agent.requests import PlaybackReport
from tests.agent.leg.test_ws import kinds, open_socket, receive, until, voice_agent
from tests.agent.leg.test_ws_listening import (
    COMPLETE,
    HANDS_FREE,
    INTERRUPTION,
    TURN_ENDS,
    listen,
    listening_server,
    of_type,
    recognizer,
    say,
    speech,
)
from tests.agent.listening.speech import silence
from tts_server.testing.server_thread import ServerThread

__all__ = ["listening_server", "recognizer", "speech"]  # the fixtures this module shares

Request = list[tuple[str, str]]  # one LLM request's history: (role, text) per message
ONSET = 3200 * 4  # 400 ms of 16 kHz s16le: past the onset and the 200 ms barge-in


def recorded(model: Any) -> list[Request]:
    """Each history the conversation's model is asked with, from now on (the real demo model,
    its ``stream`` wrapped to note what it gets)."""
    requests: list[Request] = []
    stream: Callable[..., AsyncGenerator[Any, None]] = model.stream

    async def recording(messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        texts = [" ".join(b["text"] for b in m["content"] if "text" in b) for m in messages]
        requests.append([(m["role"], text) for m, text in zip(messages, texts, strict=True)])
        async for event in stream(messages, *args, **kwargs):
            yield event

    model.stream = recording
    return requests


class Withdrawals:
    """A front door's withdrawal hook, scripted: what it was asked, and what it answers."""

    def __init__(self, answer: str | None = "Stop.", error: Exception | None = None) -> None:
        self.answer, self.error = answer, error
        self.asked: list[tuple[str, str, PlaybackReport | None]] = []
        self.told: list[Event] = []

    async def withdraw(
        self, turn_id: str, conversation: str, heard: PlaybackReport | None
    ) -> str | None:
        self.asked.append((turn_id, conversation, heard))
        if self.error is not None:
            raise self.error
        return self.answer

    async def tell(self, event: Event) -> None:
        self.told.append(event)

    def continuation(self) -> Continuation:
        return Continuation("c1", self.withdraw, self.tell)


async def test_a_cut_reply_is_withdrawn_once_by_the_page_report_and_its_prompt_leads() -> None:
    hook = Withdrawals()
    continuation = hook.continuation()
    heard = PlaybackReport("t1", 0, 0.0)
    continuation.cut("t1")
    continuation.cut(None)  # no turn on the air: the cut one stays
    assert await continuation.prompt("and go on.", heard) == "Stop. and go on."
    assert hook.asked == [("t1", "c1", heard)] and hook.told == [TurnWithdrawn("t1", "Stop.")]
    assert await continuation.prompt("Again.", None) == "Stop. Again."  # settled once, carried
    continuation.taken()
    assert await continuation.prompt("New.", None) == "New." and len(hook.asked) == 1


@pytest.mark.parametrize("answer", [None, ""])
async def test_a_reply_the_conversation_keeps_carries_nothing_and_tells_nothing(
    answer: str | None,
) -> None:
    hook = Withdrawals(answer)
    continuation = hook.continuation()
    continuation.cut("t1")
    assert await continuation.prompt("Go on.", None) == "Go on."
    assert hook.asked == [("t1", "c1", None)] and hook.told == []


async def test_with_no_cut_or_no_hook_nothing_is_asked() -> None:
    hook = Withdrawals()
    assert await hook.continuation().prompt("Hello.", None) == "Hello."  # nothing was cut
    continuation = Continuation("c1", None, hook.tell)  # a door that never withdraws
    continuation.cut("t1")
    assert await continuation.prompt("Hello.", None) == "Hello."
    assert hook.asked == [] and hook.told == []


async def test_typing_forgets_the_cut_reply_and_the_carried_prompt() -> None:
    hook = Withdrawals()
    continuation = hook.continuation()
    continuation.cut("t1")
    continuation.forget()
    assert await continuation.prompt("Typed.", None) == "Typed." and hook.asked == []
    continuation.cut("t2")
    assert await continuation.prompt("Said.", None) == "Stop. Said."
    continuation.forget()
    assert await continuation.prompt("Typed.", None) == "Typed." and len(hook.asked) == 1


async def test_a_withdrawal_that_fails_keeps_the_reply_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hook = Withdrawals(error=RuntimeError("the conversation went away"))
    continuation = hook.continuation()
    continuation.cut("t1")
    with caplog.at_level(logging.ERROR, "agent.ws"):
        assert await continuation.prompt("Go on.", None) == "Go on."
    [logged] = caplog.records
    assert logged.getMessage() == "withdrawing turn t1 failed" and hook.told == []
    assert "the conversation went away" in caplog.text  # with its traceback


async def first_audio(socket: ClientConnection, at_least: int) -> None:
    """Read on until ``at_least`` bytes of the running reply's audio came."""
    got = 0
    async with asyncio.timeout(60):
        while got < at_least:
            frame = await receive(socket)
            got += len(frame) if isinstance(frame, bytes) else 0


async def ask_then_go_on(
    server: ServerThread,
    speech: dict[str, bytes],
    conversation: str,
    heard_ms: float | None,
    before_ms: float = 0,
) -> tuple[list[Request], list[Any], str, str, str]:
    """Say ``COMPLETE``; once its reply starts (and ``before_ms`` of its audio came), say
    ``INTERRUPTION`` over it, reporting as the page does at ``speech.start`` that playback
    stopped ``heard_ms`` into segment 0 (None: no report). Returns the LLM requests, the frames
    from the second utterance on, the two transcripts and the first turn's id."""
    model = voice_agent(server).conversations.get(conversation).agent.model
    model.update_config(sentences=2, first_token_delay_s=0.0)
    requests = recorded(model)
    async with await open_socket(server, conversation) as socket:
        await listen(socket, HANDS_FREE)
        await say(socket, silence(300) + speech[COMPLETE] + silence(TURN_ENDS))
        asked = await until(socket, "turn.start")
        turn_id = asked[-1]["turn_id"]  # type: ignore[index]
        if before_ms:
            await first_audio(socket, int(before_ms * 48))  # 24 kHz s16le: 48 bytes a ms
        pcm = speech[INTERRUPTION]
        await say(socket, pcm[:ONSET])
        await until(socket, "speech.start")
        if heard_ms is not None:
            await socket.send(
                json.dumps({"type": "heard", "turn_id": turn_id, "seq": 0, "ms": heard_ms})
            )
        await say(socket, pcm[ONSET:] + silence(TURN_ENDS))
        frames = await until(socket, "turn.start")
        await until(socket, "text.delta")  # the next request was made
        await socket.send('{"type": "cancel"}')
        await until(socket, "cancelled")
    said = [f["text"] for f in of_type(asked, "transcript")]
    return requests, frames, said[0], of_type(frames, "transcript")[0]["text"], turn_id


async def test_speech_over_a_reply_nobody_heard_withdraws_it_and_continues_the_user_turn(
    listening_server: ServerThread, speech: dict[str, bytes]
) -> None:
    requests, frames, first, second, cut = await ask_then_go_on(
        listening_server, speech, "go-on", 0.0
    )
    order = [k for k in kinds(frames) if k != "<audio>"]
    assert "cancelled" in order and order.index("cancelled") < order.index("transcript")
    # The page is told, between the words and the next turn, to show them as one turn.
    assert order.index("transcript") < order.index("turn.withdrawn") < order.index("turn.start")
    [withdrawn] = of_type(frames, "turn.withdrawn")
    assert withdrawn == {"type": "turn.withdrawn", "turn_id": cut, "prompt": first}
    # The next request carries one user turn, both utterances, and no reply between them.
    assert requests[-1] == [("user", f"{first} {second}")], requests
    history = voice_agent(listening_server).conversations.get("go-on").agent.messages
    assert history[0]["content"][0]["text"] == f"{first} {second}"  # the first turn is gone
    assert [m["role"] for m in history] == ["user", "assistant"]  # (this one, cut in the test)


async def test_a_reply_heard_in_part_keeps_what_was_heard_before_the_next_turn(
    listening_server: ServerThread, speech: dict[str, bytes]
) -> None:
    requests, frames, first, second, _ = await ask_then_go_on(
        listening_server, speech, "heard-some", 1500.0, before_ms=2000
    )
    assert not of_type(frames, "turn.withdrawn")
    [(user, asked), (assistant, kept), (again, said)] = requests[-1]
    assert (user, asked, again, said) == ("user", first, "user", second)
    assert assistant == "assistant" and kept.endswith(INTERRUPTED_NOTE) and kept != INTERRUPTED_NOTE
