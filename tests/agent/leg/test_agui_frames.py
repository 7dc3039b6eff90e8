"""Every AG-UI ``/ws`` frame within AgentCore's 32 KB WebSocket frame limit, read as 32,000
bytes (``agent.leg.agui_frames``): the segmenter's longest sentence and its word timings riding
on its audio, a long text delta, a tool's long input and result, a long error; every frame
parsed by ag-ui-protocol's models, and what a client rebuilds from them checked whole."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    RunErrorEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    ToolCallResultEvent,
)

from agent.browser_leg import MAX_FRAME_BYTES
from agent.events import (
    CUT,
    AudioDelta,
    ErrorEvent,
    Event,
    Segment,
    SegmentMarks,
    TextDelta,
    ToolEnd,
    ToolStart,
    TurnEnd,
    TurnStart,
)
from agent.leg.agui import AguiTranslator, agui_json
from agent.leg.agui_frames import agui_frames, fitted
from agent.leg.agui_input import MAX_ID_CHARS, AguiRun, parse_run_input
from agent.requests import BadRequest, TurnRequest
from tests.agent.agui_client import kinds, parse, run_input
from tests.agent.test_frames import ASTRAL, longest_segment
from tts_protocol import Word

RUN = AguiRun("thread", "run", TurnRequest("hi"))
CONTROL = "\x1f"  # 6 bytes of JSON (\u001f): the widest a character gets there


def frames_of(events: list[Event], run: AguiRun = RUN) -> list[str]:
    """The /ws frames of a run's events, each within the bound and parsed by ag-ui-protocol."""
    translator = AguiTranslator(run)
    frames = [f for e in events for out in translator.translate(e) for f in agui_frames(out)]
    assert max(len(frame.encode()) for frame in frames) <= MAX_FRAME_BYTES
    for frame in frames:
        parse(frame)
    return frames


def values(frames: list[str], name: str) -> list[dict[str, Any]]:
    events = [parse(frame) for frame in frames]
    return [e.value for e in events if isinstance(e, CustomEvent) and e.name == name]


def deltas(frames: list[str], kind: str) -> list[dict[str, Any]]:
    return [body for body in map(json.loads, frames) if body["type"] == kind]


@pytest.mark.parametrize("word", ["a", ASTRAL, "\u00e9t\u00e9", ASTRAL * 3])
def test_the_longest_sentence_and_its_word_timings_ride_its_audio_within_a_frame(
    word: str,
) -> None:
    text = longest_segment(word)
    assert len(text) > 300  # at the segmenter's cap (350 characters)
    spoken = " ".join(["ninety-nine quintillion"] * 40)  # normalization reads a word out long
    words = tuple(
        Word(w, 123456.7 + i, 123457.8 + i, spoken) for i, w in enumerate(text.split(" "))
    )
    pcm = bytes(range(256)) * 18 + bytes(192)  # 100 ms: one audio.delta's most
    events = [TurnStart("t", "stream"), Segment(7, text), SegmentMarks(7, words)]
    frames = frames_of([*events, AudioDelta(7, pcm), TurnEnd()])
    [sentence] = values(frames, "voice.sentence")
    assert sentence["text"] == text  # the sentence fits whole
    audio = values(frames, "voice.audio")
    assert len(audio) > 1  # the words made the chunk too big: split with its audio
    assert {chunk["segmentId"] for chunk in audio} == {7}
    assert b"".join(base64.b64decode(chunk["audio"]) for chunk in audio) == pcm
    assert all(len(base64.b64decode(chunk["audio"])) % 2 == 0 for chunk in audio)
    timed = [w for chunk in audio for w in chunk.get("words", [])]
    assert [(w["text"], w["startMs"], w["spoken"]) for w in timed] == [
        (w.text, w.start_ms, w.spoken) for w in words
    ]  # every word, in order, whole


def test_a_long_text_delta_is_split_in_its_message_and_joins_back() -> None:
    text = ("Hello w\u00f6rld " + ASTRAL + CONTROL) * 5000
    frames = frames_of([TurnStart("t", "stream"), TextDelta(text), TurnEnd()])
    parts = deltas(frames, "TEXT_MESSAGE_CONTENT")
    assert len(parts) > 1 and "".join(part["delta"] for part in parts) == text
    assert len({part["messageId"] for part in parts}) == 1
    assert kinds([parse(f) for f in frames]).count("TEXT_MESSAGE_START") == 1


def test_a_tools_long_input_is_split_and_its_long_result_cut_with_a_mark() -> None:
    args = json.dumps({"query": "w\u00f6rld " * 20_000})
    result = "late news " + ASTRAL * 50_000
    frames = frames_of(
        [
            TurnStart("t", "stream"),
            ToolStart("lookup", "call-1", args),
            ToolEnd("call-1", "lookup", "ok", 12.5, result),
            TurnEnd(),
        ]
    )
    parts = deltas(frames, "TOOL_CALL_ARGS")
    assert len(parts) > 1 and "".join(part["delta"] for part in parts) == args
    [ended] = deltas(frames, "TOOL_CALL_RESULT")
    frame = json.dumps(ended, ensure_ascii=False, separators=(",", ":"))
    assert MAX_FRAME_BYTES - 24 <= len(frame.encode()) <= MAX_FRAME_BYTES  # cut close to it
    assert ended["content"].endswith(CUT) and result.startswith(ended["content"][: -len(CUT)])
    assert ended["toolCallId"] == "call-1" and ended["metadata"]["status"] == "ok"


@pytest.mark.parametrize("text", ["model said: " + ASTRAL * 10_000, CONTROL * 40_000])
def test_a_long_error_is_cut_in_its_custom_event_and_its_run_error(text: str) -> None:
    frames = frames_of([TurnStart("t", "stream"), ErrorEvent("llm_failed", text), TurnEnd()])
    [error] = values(frames, "voice.error")
    assert error["code"] == "llm_failed" and error["message"].endswith(CUT)
    failed = parse(frames[-1])
    assert isinstance(failed, RunErrorEvent) and failed.code == "llm_failed"
    assert failed.message.endswith(CUT) and text.startswith(failed.message[: -len(CUT)])


def test_one_word_too_long_for_a_frame_keeps_its_times_and_a_cut_text() -> None:
    word = Word("y" * 50_000, 1.0, 2.0, "z" * 50_000)
    marks = SegmentMarks(3, (word,))
    frames = frames_of([TurnStart("t", "stream"), marks, AudioDelta(3, b"\x01\x00" * 2400)])
    [chunk] = values(frames, "voice.audio")
    [short] = chunk["words"]
    assert (short["startMs"], short["endMs"]) == (1.0, 2.0) and "spoken" not in short
    assert short["text"].endswith(CUT) and len(base64.b64decode(chunk["audio"])) == 4800
    assert len(short["text"]) > MAX_FRAME_BYTES // 4  # a good part of it, not the mark alone


def test_more_words_than_any_frame_holds_on_one_sample_are_refused_not_sent_over() -> None:
    """No sentence has so many (the segmenter caps one at 350 characters): thousands of words
    on a chunk too short to halve cannot fit even cut to their marks, and no frame is made."""
    words = tuple(Word(f"w{i}", float(i), i + 1.0) for i in range(3_000))
    translator = AguiTranslator(RUN)
    translator.translate(SegmentMarks(1, words))
    [audio] = translator.translate(AudioDelta(1, b"\x01\x00"))
    with pytest.raises(ValueError, match=r"voice\.audio of 3000 words cannot fit a 32000-byte"):
        agui_frames(audio)


def test_a_frame_that_fits_is_left_as_it_is_and_the_bound_is_inclusive() -> None:
    [event] = AguiTranslator(RUN).translate(ToolStart("x", "c", "{}"))[1:2]
    empty = len(agui_json(event).encode())
    exact = event.model_copy(update={"delta": "x" * (MAX_FRAME_BYTES - empty + 2)})
    assert len(agui_json(exact).encode()) == MAX_FRAME_BYTES
    assert fitted(exact) == [exact] and agui_frames(exact) == [agui_json(exact)]
    longer = exact.model_copy(update={"delta": exact.delta + "x"})  # type: ignore[attr-defined]
    assert [len(part.delta) for part in fitted(longer)] == [len(longer.delta) // 2] * 2  # type: ignore[attr-defined]


def test_a_runs_ids_are_echoed_whole_within_a_frame_up_to_their_bound() -> None:
    widest = CONTROL * MAX_ID_CHARS
    run = AguiRun(widest, widest, TurnRequest("hi"))
    frames = frames_of([TurnStart("t", "stream"), TurnEnd()], run)
    started: BaseEvent = parse(frames[0])
    assert isinstance(started, RunStartedEvent) and started.thread_id == widest
    body = run_input("hi", "t" * (MAX_ID_CHARS + 1))
    with pytest.raises(BadRequest) as refused:
        parse_run_input(body)
    assert refused.value.code == "invalid_run_input"
    assert str(MAX_ID_CHARS) in refused.value.message
    assert parse_run_input(run_input("hi", "t" * MAX_ID_CHARS)).thread_id == "t" * MAX_ID_CHARS


def test_two_long_words_on_the_least_audio_that_halves_ride_one_each_whole() -> None:
    """A sentence's last chunk may be a few samples with its words on it: two words too big
    for one frame together, each within one, go out one a piece, neither cut."""
    words = tuple(Word(w * 12_000, 0.0, 1.0, w * 6_000) for w in ("a", "b"))
    pcm = b"\x01\x00\x02\x00"  # two samples
    marks = SegmentMarks(3, words)
    frames = frames_of([TurnStart("t", "stream"), marks, AudioDelta(3, pcm), TurnEnd()])
    audio = values(frames, "voice.audio")
    assert [base64.b64decode(chunk["audio"]) for chunk in audio] == [pcm[:2], pcm[2:]]
    assert [chunk["words"] for chunk in audio] == [
        [{"text": w.text, "startMs": 0.0, "endMs": 1.0, "spoken": w.spoken}] for w in words
    ]


def test_a_word_whose_spoken_form_is_too_long_keeps_its_text_whole() -> None:
    word = Word("quintillions", 1.0, 2.0, "ninety-nine quintillion " * 2_000)
    marks = SegmentMarks(3, (word,))
    frames = frames_of([TurnStart("t", "stream"), marks, AudioDelta(3, b"\x01\x00" * 2400)])
    [chunk] = values(frames, "voice.audio")
    assert chunk["words"] == [{"text": "quintillions", "startMs": 1.0, "endMs": 2.0}]


def test_a_text_cut_past_its_escapes_keeps_the_longest_part_that_fits() -> None:
    """Control characters take six bytes of JSON each: the cut keeps all of them it can and
    then as much as fits, not a byte more, nor a character less."""
    result = CONTROL * 4_000 + "a" * 30_000
    event = ToolCallResultEvent(message_id="m", tool_call_id="c", content=result, role="tool")
    [frame] = agui_frames(event)
    content = json.loads(frame)["content"]
    kept = content[: -len(CUT)]
    assert content.endswith(CUT) and result.startswith(kept)
    assert len(frame.encode()) <= MAX_FRAME_BYTES
    longer = event.model_copy(update={"content": result[: len(kept) + 1] + CUT})
    assert len(agui_json(longer).encode()) > MAX_FRAME_BYTES


@pytest.mark.parametrize("limit", [2_000, 5_000])
def test_a_smaller_frame_limit_is_kept_as_the_default_one_is(limit: int) -> None:
    """Another gateway's limit: every piece within it, the text and the audio whole."""
    delta = TextMessageContentEvent(message_id="m", delta="w\u00f6rld " * 2_000)
    parts = [json.loads(frame) for frame in agui_frames(delta, limit)]
    assert "".join(part["delta"] for part in parts) == delta.delta
    words = tuple(Word(f"word{i}", i, i + 1.0) for i in range(200))
    translator = AguiTranslator(RUN)
    translator.translate(SegmentMarks(1, words))
    pcm = bytes(range(256)) * 18 + bytes(192)
    [audio] = translator.translate(AudioDelta(1, pcm))
    frames = [f for event in (delta, audio) for f in agui_frames(event, limit)]
    assert max(len(frame.encode()) for frame in frames) <= limit
    chunks = values([f for f in frames if '"voice.audio"' in f], "voice.audio")
    assert b"".join(base64.b64decode(chunk["audio"]) for chunk in chunks) == pcm
    assert [w["text"] for c in chunks for w in c.get("words", [])] == [w.text for w in words]


def test_an_event_no_cut_can_fit_is_refused_not_sent_a_byte_over() -> None:
    """Both ids too long (``agui_input`` bounds them, so no run of ours gets here): the longer
    cut to nothing leaves the event one byte over the limit, and no frame is made of it."""
    bare = len(agui_json(RunStartedEvent(thread_id=CUT, run_id="")).encode())
    run_id = "r" * (MAX_FRAME_BYTES + 1 - bare)
    event = RunStartedEvent(thread_id=run_id + "t", run_id=run_id)
    with pytest.raises(ValueError, match="RUN_STARTED event cannot be cut to a 32000-byte frame"):
        agui_frames(event)
