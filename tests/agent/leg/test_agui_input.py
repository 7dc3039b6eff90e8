"""A ``RunAgentInput`` read once: the run's ids, its prompt and its speech options, or a typed
refusal (``BadRequest``) for each way it can be wrong."""

from __future__ import annotations

from typing import Any

import pytest

from agent.leg.agui_input import AUDIO_FORMAT, parse_run_input, run_of
from agent.requests import BadRequest, PlaybackReport
from tests.agent.agui_client import run_input


def test_the_latest_user_message_is_the_prompt_and_the_thread_the_conversation() -> None:
    body = run_input("And now?", "thread-1", voice="jf_alpha", speed=1.2, marks=True)
    body["messages"] = [
        {"id": "1", "role": "user", "content": "First"},
        {"id": "2", "role": "assistant", "content": "An answer"},
        {
            "id": "3",
            "role": "user",
            "content": [{"type": "text", "text": "And"}, {"type": "text", "text": "now?"}],
        },
    ]
    run = run_of(parse_run_input(body))
    assert (run.thread_id, run.run_id) == ("thread-1", body["runId"])
    assert run.request.prompt == "And\nnow?" and run.request.speed == 1.2 and run.request.marks
    assert run.request.voice == (("jf_alpha", 1.0),) and run.audio_format == AUDIO_FORMAT


def test_a_playback_report_rides_in_the_speech_props() -> None:
    heard = {"turn_id": "t1", "seq": 1, "ms": 250}
    run = run_of(parse_run_input(run_input("Go on", "t", heard=heard)))
    assert run.request.heard == PlaybackReport("t1", 1, 250.0)


def test_other_forwarded_props_are_the_apps_own() -> None:
    body = run_input("Hi", "t") | {"forwardedProps": {"copilot": {"x": 1}}, "extra": True}
    assert run_of(parse_run_input(body)).request.prompt == "Hi"


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ([], "must be a JSON object"),
        ({}, "threadId: Field required; runId: Field required; messages: Field required"),
        ({"threadId": 1, "runId": "r", "messages": []}, "threadId: Input should be a valid string"),
        ({"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "robot"}]}, "messages.0"),
    ],
)
def test_what_is_not_a_run_agent_input_is_refused_by_its_field(payload: object, says: str) -> None:
    with pytest.raises(BadRequest) as refused:
        parse_run_input(payload)
    assert refused.value.code == "invalid_run_input" and says in refused.value.message


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"threadId": " "}, "invalid_run_input"),
        ({"messages": []}, "no_user_message"),
        (
            {"messages": [{"id": "t", "role": "tool", "content": "42", "toolCallId": "c"}]},
            "no_user_message",
        ),
        ({"messages": [{"id": "u", "role": "user", "content": []}]}, "no_user_message"),
        ({"messages": [{"id": "u", "role": "user", "content": "   "}]}, "invalid_prompt"),
        ({"messages": [{"id": "u", "role": "user", "content": "x" * 4001}]}, "prompt_too_long"),
        ({"forwardedProps": {"speech": []}}, "invalid_speech"),
        ({"forwardedProps": {"speech": {"volume": 11}}}, "invalid_speech"),
        ({"forwardedProps": {"speech": {"format": "opus"}}}, "unsupported_audio_format"),
        ({"forwardedProps": {"speech": {"mode": "later"}}}, "invalid_mode"),
        ({"forwardedProps": {"speech": {"marks": "yes"}}}, "invalid_marks"),
        ({"forwardedProps": {"speech": {"heard": {"turn_id": "t"}}}}, "invalid_heard"),
    ],
)
def test_a_run_that_cannot_start_is_refused_with_a_typed_code(
    change: dict[str, Any], code: str
) -> None:
    with pytest.raises(BadRequest) as refused:
        run_of(parse_run_input(run_input("Hello", "t") | change))
    assert refused.value.code == code and refused.value.message
