"""The conversation remembers only what the user heard of a turn cut off (``agent/core/memory.py``).

The history is a real strands ``Agent``'s, the model the offline ``DemoModel`` (recording the
messages each call is given), the speech the real TTS server's with its word timings.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from strands import Agent
from strands.types.content import Messages

from agent.core.conversations import Conversation, Conversations
from agent.core.llm import DemoConfig, DemoModel, demo_reply, demo_tokens
from agent.core.memory import (
    INTERRUPTED_NOTE,
    NOTHING_HEARD_NOTE,
    Spoken,
    SpokenSegment,
    remember,
    turn_start,
)
from agent.core.turn import Turn
from agent.requests import BadRequest, PlaybackReport, TurnRequest, parse_request
from tests.conftest import start_server
from tts_client import WebSocketTransport
from tts_protocol import Word
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

Event = dict[str, Any]


class RecordingModel(DemoModel):
    """The demo model, keeping a copy of the messages of every call it gets."""

    def __init__(self, config: DemoConfig) -> None:
        super().__init__(config)
        self.calls: list[Messages] = []

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any):  # type: ignore[override]
        self.calls.append(copy.deepcopy(messages))
        async for event in super().stream(messages, *args, **kwargs):
            yield event


# --- a playback position as text -----------------------------------------------------------


def timed(text: str, word_ms: float = 300.0, gap_ms: float = 100.0) -> SpokenSegment:
    """A segment whose every word lasts ``word_ms``, with ``gap_ms`` between words."""
    words = [
        Word(word.strip(".,!?"), i * (word_ms + gap_ms), i * (word_ms + gap_ms) + word_ms)
        for i, word in enumerate(text.split())
    ]
    samples = round(words[-1].end_ms * 24)
    return SpokenSegment(text, samples=samples, words=words, ended=True)


def test_a_position_in_timed_audio_keeps_the_words_played_at_least_half() -> None:
    segment = timed("One two three four five six.")
    assert segment.heard(0.0) == ""
    assert segment.heard(149.0) == ""  # "One" not yet half played
    assert segment.heard(151.0) == "One"
    assert segment.heard(1250.0) == "One two three"  # inside "four", before its middle
    assert segment.heard(1400.0) == "One two three four"  # past its middle
    assert segment.heard(10_000.0) == segment.heard(None) == "One two three four five six."


def test_timings_of_words_the_text_does_not_spell_fall_back_to_proportion() -> None:
    segment = timed("It costs $3.50 today.")
    spelt = segment.words[2]
    segment.words[2] = Word("three dollars", spelt.start_ms, spelt.end_ms)
    assert segment.heard(segment.sent_ms / 2) == "It costs"


def test_without_timings_the_text_is_cut_in_proportion_to_its_characters() -> None:
    segment = SpokenSegment("aaaa bbbb cccc dddd", samples=24_000, ended=True)  # 1 s
    assert segment.heard(500.0) == "aaaa bbbb"
    assert segment.heard(100.0) == ""
    assert segment.heard(2_000.0) == "aaaa bbbb cccc dddd"
    # "cccc" is characters 10-14, its middle at 12 (of 19): begun but not half said, it is
    # not heard; half said but not ended, it is
    assert segment.heard(600.0) == "aaaa bbbb"  # up to character 11.4
    assert segment.heard(700.0) == "aaaa bbbb cccc"  # up to 13.3


def test_with_no_report_what_was_sent_as_audio_counts() -> None:
    spoken = Spoken()
    for seq, text in enumerate(["First one.", "Second one here.", "Third, never sent."]):
        spoken.said(seq, text)
    spoken.sounded(0, 24_000)
    spoken.ended(0)
    spoken.sounded(1, 12_000)  # still coming, no timings: audio begun counts in full
    assert spoken.heard() == "First one. Second one here."
    spoken.timed(1, [Word("Second", 0, 300), Word("one", 400, 600), Word("here", 700, 900)])
    assert spoken.heard() == "First one. Second one"  # 500 ms sent: "here" never came
    assert spoken.heard(0, 10_000.0) == "First one."
    assert spoken.heard(2, 5_000.0) == "First one. Second one"  # not past what was sent


def test_a_repeated_word_is_found_after_the_words_before_it() -> None:
    segment = timed("The cat saw the dog.")
    assert segment.heard(151.0) == "The"  # the first "the", not the last
    assert segment.heard(1351.0) == "The cat saw the"  # the second "the", not the first again


def test_a_segment_stopped_at_the_end_of_its_audio_was_heard_in_full() -> None:
    segment = timed("One two three.")
    assert segment.heard(segment.sent_ms) == "One two three."  # with its full stop


def test_a_word_whose_middle_is_at_the_position_was_heard() -> None:
    segment = SpokenSegment("aaaa bbbbb", samples=24_000, ended=True)  # 10 characters, 1 s
    assert segment.heard(200.0) == "aaaa"  # "aaaa"'s middle is character 2.0, the limit
    assert segment.heard(199.0) == ""


def test_asides_are_never_heard_and_keep_their_place() -> None:
    spoken = Spoken()
    spoken.said(0, "Let me look.")
    spoken.said(1, "One moment.", aside=True)  # a tool's filler: the service's words
    spoken.said(2, "It is noon.")
    for seq in range(3):
        spoken.sounded(seq, 24_000)
        spoken.ended(seq)
    assert spoken.heard() == "Let me look. It is noon."
    assert spoken.heard(1, 500.0) == "Let me look."
    assert spoken.heard(2) == "Let me look. It is noon."  # no position: as far as was sent


# --- a valid history ------------------------------------------------------------------------


def tool_use(tool_id: str, text: str = "Let me look.") -> dict[str, Any]:
    use = {"toolUseId": tool_id, "name": "clock", "input": {}}
    return {"role": "assistant", "content": [{"text": text}, {"toolUse": use}]}


def tool_result(tool_id: str) -> dict[str, Any]:
    result = {"toolUseId": tool_id, "status": "success", "content": [{"text": "noon"}]}
    return {"role": "user", "content": [{"toolResult": result}]}


def roles(messages: Messages) -> list[str]:
    return [m["role"] for m in messages]


def test_a_cut_keeps_completed_tool_exchanges_and_drops_a_half_tool_call() -> None:
    before = [
        {"role": "user", "content": [{"text": "Hi"}]},
        {"role": "assistant", "content": [{"text": "Hello."}]},
    ]
    turn = [
        {"role": "user", "content": [{"text": "What time is it, twice?"}]},
        tool_use("t1"),
        tool_result("t1"),
        tool_use("t2"),  # cut during the tool: its result never came
    ]
    messages = copy.deepcopy(before + turn)
    remember(messages, 2, "What time is it, twice?", "Let me look. It is noon")
    assert messages[:3] == before + turn[:1]
    assert messages[3] == {"role": "assistant", "content": [turn[1]["content"][1]]}  # no text
    assert messages[4] == turn[2]
    assert messages[5] == {
        "role": "assistant",
        "content": [{"text": f"Let me look. It is noon {INTERRUPTED_NOTE}"}],
    }
    assert roles(messages) == ["user", "assistant"] * 3


def test_a_cut_keeps_every_completed_tool_exchange() -> None:
    prompt = {"role": "user", "content": [{"text": "Two clocks, one after the other?"}]}
    turn = [prompt, tool_use("t1"), tool_result("t1"), tool_use("t2"), tool_result("t2")]
    messages = copy.deepcopy(turn)
    remember(messages, 0, "Two clocks, one after the other?", "It is noon")
    assert messages[1:5:2] == [
        {"role": "assistant", "content": [use["content"][1]]} for use in (turn[1], turn[3])
    ]
    assert messages[2:5:2] == [turn[2], turn[4]]
    assert roles(messages) == ["user", "assistant"] * 3


@pytest.mark.parametrize("swap", ["use", "result"])
def test_a_tool_exchange_in_the_wrong_roles_is_dropped(swap: str) -> None:
    prompt = {"role": "user", "content": [{"text": "What time is it?"}]}
    use, result = tool_use("t1"), tool_result("t1")
    if swap == "use":
        use["role"] = "user"
    else:
        result["role"] = "assistant"
    messages = [prompt, use, result]
    remember(messages, 0, "What time is it?", "")
    assert messages == [prompt, {"role": "assistant", "content": [{"text": NOTHING_HEARD_NOTE}]}]


def test_a_tool_call_answered_only_in_part_is_dropped() -> None:
    """Two tool uses in one message, one result back: Bedrock and Anthropic refuse a history
    with a tool use that has no result, so the whole exchange goes."""
    use = tool_use("t1")
    use["content"].append({"toolUse": {"toolUseId": "t2", "name": "clock", "input": {}}})
    prompt = {"role": "user", "content": [{"text": "Two clocks?"}]}
    messages = [prompt, use, tool_result("t1")]
    remember(messages, 0, "Two clocks?", "Let me look.")
    assert messages == [
        prompt,
        {"role": "assistant", "content": [{"text": f"Let me look. {INTERRUPTED_NOTE}"}]},
    ]


def test_a_cut_before_strands_recorded_the_prompt_still_alternates() -> None:
    messages: Messages = [
        {"role": "user", "content": [{"text": "Hi"}]},
        {"role": "assistant", "content": [{"text": "Hello."}]},
    ]
    remember(messages, 2, "Too quick", "")
    assert messages[2:] == [
        {"role": "user", "content": [{"text": "Too quick"}]},
        {"role": "assistant", "content": [{"text": NOTHING_HEARD_NOTE}]},
    ]


def test_a_turn_starts_just_after_its_anchor_wherever_it_is() -> None:
    messages: Messages = [{"role": "user", "content": [{"text": str(i)}]} for i in range(4)]
    assert [turn_start(messages, m) for m in messages] == [1, 2, 3, 4]
    assert turn_start(messages, None) == 0  # nothing came before the turn
    assert turn_start(messages, {"role": "user", "content": [{"text": "0"}]}) is None  # equal, gone
    assert turn_start([], messages[0]) is None  # the history was cleared


# --- the report, as a client sends it ---------------------------------------------------------


def test_a_prompt_carries_its_playback_report() -> None:
    heard = {"turn_id": "ab12", "seq": 1, "ms": 812.5}
    assert parse_request({"prompt": "Hi", "heard": heard}).heard == PlaybackReport("ab12", 1, 812.5)
    assert parse_request({"prompt": "Hi"}).heard is None


@pytest.mark.parametrize(
    "heard",
    [
        "ab12",
        {"turn_id": "ab12", "seq": 1},
        {"turn_id": "ab12", "seq": 1, "ms": 5, "extra": 1},
        {"turn_id": "", "seq": 1, "ms": 5},
        {"turn_id": "ab12", "seq": -1, "ms": 5},
        {"turn_id": "ab12", "seq": True, "ms": 5},
        {"turn_id": "ab12", "seq": 1.5, "ms": 5},
        {"turn_id": "ab12", "seq": 1, "ms": -0.1},
        {"turn_id": "ab12", "seq": 1, "ms": float("nan")},
        {"turn_id": "ab12", "seq": 1, "ms": "5"},
    ],
)
def test_a_malformed_report_is_invalid_heard(heard: object) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_request({"prompt": "Hi", "heard": heard})
    assert refused.value.code == "invalid_heard" and "'heard'" in refused.value.message


# --- a conversation over the real TTS server ---------------------------------------------


def recording_agent() -> Agent:
    model = RecordingModel(DemoConfig(sentences=4, tokens_per_second=40, first_token_delay_s=0.05))
    return Agent(model=model, callback_handler=None)


@pytest.fixture(scope="module")
def fake_server() -> Iterator[ServerThread]:
    """A TTS server on the fast fake engine (no word timings), for all but the timed test."""
    server = start_server(FakeEngine())
    yield server
    server.stop()


@pytest.fixture
async def conversations(fake_server: ServerThread) -> AsyncIterator[Conversations]:
    opened = Conversations(recording_agent, WebSocketTransport(fake_server.ws_url))
    yield opened
    await opened.aclose()


async def play(turn: Turn, until: Any = None) -> tuple[asyncio.Task[list[Event]], list[Event]]:
    """Consume ``turn`` in a task; return once an event satisfies ``until`` (None: its end)."""
    seen: list[Event] = []
    reached = asyncio.Event()

    async def listen() -> list[Event]:
        async for event in turn.run():
            seen.append(event.to_dict())
            if until is not None and until(seen[-1]):
                reached.set()
        reached.set()
        return seen

    task = asyncio.create_task(listen())
    await asyncio.wait_for(reached.wait(), 60)
    return task, seen


def audio_of(seq: int) -> Any:
    return lambda event: event["type"] == "audio.delta" and event["seq"] == seq


def words_seen(seq: int, count: int) -> Any:
    """True once ``count`` words of segment ``seq`` have come (each with the audio it times)."""
    seen = 0

    def reached(event: Event) -> bool:
        nonlocal seen
        if event["type"] == "segment.marks" and event["seq"] == seq:
            seen += len(event["words"])
        return seen >= count

    return reached


def segment_texts(events: list[Event]) -> list[str]:
    return [e["text"] for e in events if e["type"] == "segment"]


def words_of(events: list[Event], seq: int) -> list[dict[str, Any]]:
    return [
        w for e in events if e["type"] == "segment.marks" and e["seq"] == seq for w in e["words"]
    ]


def recording(conversation: Conversation) -> RecordingModel:
    assert isinstance(conversation.agent, Agent)
    assert isinstance(conversation.agent.model, RecordingModel)
    return conversation.agent.model


def texts(messages: Messages) -> list[tuple[str, str]]:
    return [(m["role"], " ".join(b["text"] for b in m["content"] if "text" in b)) for m in messages]


async def test_a_cut_at_word_k_of_sentence_two_is_remembered_up_to_word_k(
    tts_server: ServerThread,
) -> None:
    conversations = Conversations(recording_agent, WebSocketTransport(tts_server.ws_url))
    try:
        await cut_at_word_k(conversations.get("cut-at-k"))
    finally:
        await conversations.aclose()


async def cut_at_word_k(conversation: Conversation) -> None:
    model = recording(conversation)
    model.update_config(sentences=2)  # the real engine's timings, on as little speech as will do
    first = await conversation.start_turn(TurnRequest("Tell me about memory", marks=True))
    k = 4
    listening, seen = await play(first, until=words_seen(1, k + 2))
    words = words_of(seen, 1)
    assert len(words) > k + 1
    ms = words[k - 1]["end_ms"] + 10  # the page stopped just after word k of sentence 2
    heard = {"turn_id": first.id, "seq": 1, "ms": ms}
    model.update_config(sentences=1)
    second = await conversation.start_turn(parse_request({"prompt": "Wait", "heard": heard}))
    events = await asyncio.wait_for(listening, 10)  # superseded, or just ended: trimmed alike
    await asyncio.wait_for((await play(second))[0], 60)

    call = model.calls[-1]  # the next LLM call sees only what was heard
    assert texts(call)[0] == ("user", "Tell me about memory") and texts(call)[2] == ("user", "Wait")
    role, said = texts(call)[1]
    assert role == "assistant" and said.endswith(f" {INTERRUPTED_NOTE}")
    sentences = segment_texts(events)
    kept = said.removesuffix(f" {INTERRUPTED_NOTE}")
    assert kept.startswith(sentences[0] + " ")
    second_sentence = kept.removeprefix(sentences[0] + " ").split()
    expected = sentences[1].split()[:k]
    assert abs(len(second_sentence) - k) <= 1 and second_sentence[: k - 1] == expected[: k - 1]
    assert len(call) == 3 and roles(call) == ["user", "assistant", "user"]


async def test_a_turn_cut_with_no_report_keeps_what_was_sent_as_audio(
    conversations: Conversations,
) -> None:
    conversation = conversations.get("no-report")
    first = await conversation.start_turn(TurnRequest("Tell me about cuts"))
    listening, _ = await play(first, until=audio_of(0))
    second = await conversation.start_turn(TurnRequest("Next"))
    events = await asyncio.wait_for(listening, 10)
    await asyncio.wait_for((await play(second))[0], 60)
    sounded = {e["seq"] for e in events if e["type"] == "audio.delta"}
    sent = [text for seq, text in enumerate(segment_texts(events)) if seq in sounded]  # no timings
    [_, (role, said), _] = texts(recording(conversation).calls[-1])
    assert role == "assistant" and said == f"{' '.join(sent)} {INTERRUPTED_NOTE}"
    assert len(said) < len(demo_reply("Tell me about cuts", 4))  # the rest was never heard


async def test_a_turn_cut_before_any_audio_keeps_only_a_note(
    conversations: Conversations,
) -> None:
    conversation = conversations.get("too-soon")
    first = await conversation.start_turn(TurnRequest("Never mind"))
    listening, _ = await play(first, until=lambda e: e["type"] == "text.delta")
    second = await conversation.start_turn(TurnRequest("Hello"))
    events = await asyncio.wait_for(listening, 10)
    assert not any(e["type"] == "audio.delta" for e in events)
    await asyncio.wait_for((await play(second))[0], 60)
    assert texts(recording(conversation).calls[-1]) == [
        ("user", "Never mind"),
        ("assistant", NOTHING_HEARD_NOTE),
        ("user", "Hello"),
    ]


async def test_a_completed_turn_keeps_everything_and_a_later_report_trims_it(
    conversations: Conversations,
) -> None:
    conversation = conversations.get("complete")
    first = await conversation.start_turn(TurnRequest("Tell me everything"))
    events = await asyncio.wait_for((await play(first))[0], 60)
    assert not [e for e in events if e["type"] == "error"]
    assert isinstance(conversation.agent, Agent)
    reply = demo_reply("Tell me everything", 4)
    assert texts(conversation.agent.messages) == [
        ("user", "Tell me everything"),
        ("assistant", reply),
    ]
    # The page played it all and said so: nothing changes.
    end = {"turn_id": first.id, "seq": 3, "ms": 60_000.0}
    second = await conversation.start_turn(parse_request({"prompt": "Again", "heard": end}))
    listening, _ = await play(second)
    assert texts(recording(conversation).calls[-1])[1] == ("assistant", reply)

    # The page stopped the (finished) second turn's playback halfway through its second
    # sentence, with no timings asked: that sentence is cut in proportion.
    played = await asyncio.wait_for(listening, 60)
    [first_sentence, sentence, *_] = segment_texts(played)
    [audio_ms] = [e["audio_ms"] for e in played if e["type"] == "segment.end" and e["seq"] == 1]
    halfway = {"turn_id": second.id, "seq": 1, "ms": audio_ms / 2}
    third = await conversation.start_turn(parse_request({"prompt": "Stop", "heard": halfway}))
    await asyncio.wait_for((await play(third))[0], 60)
    role, said = texts(recording(conversation).calls[-1])[3]
    kept = said.removesuffix(f" {INTERRUPTED_NOTE}").removeprefix(first_sentence + " ").split()
    assert role == "assistant" and kept == sentence.split()[: len(kept)]
    assert 0.3 < len(kept) / len(sentence.split()) < 0.7


async def test_a_report_for_a_turn_that_is_not_the_latest_is_ignored(
    conversations: Conversations,
) -> None:
    conversation = conversations.get("stale")
    first = await conversation.start_turn(TurnRequest("One"))
    await asyncio.wait_for((await play(first))[0], 60)
    second = await conversation.start_turn(TurnRequest("Two"))
    await asyncio.wait_for((await play(second))[0], 60)
    stale = {"turn_id": first.id, "seq": 0, "ms": 1.0}
    third = await conversation.start_turn(parse_request({"prompt": "Three", "heard": stale}))
    await asyncio.wait_for((await play(third))[0], 60)
    call = texts(recording(conversation).calls[-1])
    assert call[1] == ("assistant", demo_reply("One", 4))
    assert call[3] == ("assistant", demo_reply("Two", 4))


class PlainHistory:
    """A model that is not a strands ``Agent`` but keeps its history as messages, as
    strands does: the prompt when a turn starts, the reply when it completes."""

    def __init__(self) -> None:
        self.messages: Messages = []

    async def stream_async(self, prompt: str) -> AsyncIterator[dict[str, Any]]:
        self.messages.append({"role": "user", "content": [{"text": prompt}]})
        reply = demo_reply(prompt, 4)
        for token in demo_tokens(reply):
            await asyncio.sleep(0.01)
            yield {"data": token}
        self.messages.append({"role": "assistant", "content": [{"text": reply}]})


async def test_memory_works_with_any_model_that_keeps_its_history(
    fake_server: ServerThread,
) -> None:
    conversations = Conversations(PlainHistory, WebSocketTransport(fake_server.ws_url))
    try:
        conversation = conversations.get("plain")
        first = await conversation.start_turn(TurnRequest("Never mind"))
        listening, _ = await play(first, until=lambda e: e["type"] == "text.delta")
        second = await conversation.start_turn(TurnRequest("Hello"))
        await asyncio.wait_for(listening, 10)
        await asyncio.wait_for((await play(second))[0], 60)
        assert isinstance(conversation.agent, PlainHistory)
        assert texts(conversation.agent.messages) == [
            ("user", "Never mind"),
            ("assistant", NOTHING_HEARD_NOTE),
            ("user", "Hello"),
            ("assistant", demo_reply("Hello", 4)),
        ]
    finally:
        await conversations.aclose()
