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


def test_the_first_three_problems_are_named_and_the_rest_counted() -> None:
    with pytest.raises(BadRequest) as three:
        parse_run_input({})
    assert three.value.message.endswith("messages: Field required")  # no count: none left
    with pytest.raises(BadRequest) as four:
        parse_run_input({"threadId": 1, "runId": 2, "messages": 3, "tools": 4})
    assert four.value.message.endswith("messages: Input should be a valid list (and 1 more)")


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


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"runId": ""}, "threadId and runId must be non-empty strings"),
        (
            {"messages": []},
            "the latest message must be the user's (role user): this agent answers it, and "
            "calls no tools of the client's",
        ),
        (
            {"messages": [{"id": "u", "role": "user", "content": []}]},
            "the user's latest message has no text part",
        ),
        ({"forwardedProps": {"speech": "fast"}}, "forwardedProps.speech must be an object"),
        (
            {"forwardedProps": {"speech": {"format": "opus"}}},
            "forwardedProps.speech.format 'opus': offered pcm_s16le",
        ),
    ],
)
def test_a_refusal_says_what_to_change_in_the_clients_own_words(
    change: dict[str, Any], says: str
) -> None:
    """The message a front end shows: its field names as the client spells them."""
    with pytest.raises(BadRequest) as refused:
        run_of(parse_run_input(run_input("Hello", "t") | change))
    assert refused.value.message == says


def test_a_body_that_is_not_an_object_is_refused_in_words() -> None:
    with pytest.raises(BadRequest) as refused:
        parse_run_input(["not", "an", "object"])
    assert refused.value.message == "a RunAgentInput must be a JSON object"
