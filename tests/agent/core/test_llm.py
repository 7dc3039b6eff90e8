"""The demo model is a real strands Model with fixed timing; model specs build real providers."""

from __future__ import annotations

import asyncio
import time

import pytest
from strands import Agent
from strands.models import BedrockModel
from strands.models.openai import OpenAIModel

from agent.core.llm import (
    QUOTED_WORDS,
    DemoConfig,
    DemoModel,
    ModelSpecError,
    UnsupportedRequest,
    demo_reply,
    demo_tokens,
    make_model,
)


async def _stream(agent: Agent, prompt: str) -> list[tuple[float, str]]:
    started = time.perf_counter()
    return [
        (time.perf_counter() - started, event["data"])
        async for event in agent.stream_async(prompt)
        if "data" in event
    ]


async def test_demo_model_streams_its_reply_through_a_strands_agent() -> None:
    model = DemoModel(DemoConfig(sentences=4, tokens_per_second=400, first_token_delay_s=0.05))
    agent = Agent(model=model, callback_handler=None)
    deltas = await _stream(agent, "Tell me about streaming speech")
    text = "".join(d for _, d in deltas)
    assert text == demo_reply("Tell me about streaming speech", 4)
    assert text.startswith("You said: Tell me about streaming speech.")
    assert text.count(". ") + 1 >= 4 and len(deltas) > 20


async def test_demo_model_keeps_its_token_rate_and_first_token_delay() -> None:
    config = DemoConfig(sentences=2, tokens_per_second=100, first_token_delay_s=0.2)
    agent = Agent(model=DemoModel(config), callback_handler=None)
    deltas = await _stream(agent, "timing")
    first, last = deltas[0][0], deltas[-1][0]
    assert 0.18 < first < 0.5
    expected = (len(deltas) - 1) / config.tokens_per_second
    assert 0.8 * expected < last - first < 1.5 * expected + 0.1


async def test_demo_model_answers_the_latest_prompt_and_is_deterministic() -> None:
    fast = DemoModel(DemoConfig(first_token_delay_s=0, tokens_per_second=1000))
    agent = Agent(model=fast, callback_handler=None)
    first = "".join(d for _, d in await _stream(agent, "first question"))
    second = "".join(d for _, d in await _stream(agent, "second question"))
    assert first.startswith("You said: first question.")
    assert second.startswith("You said: second question.")
    assert demo_reply("second question", 4) == second


def test_demo_reply_quotes_the_whole_prompt_or_says_it_is_shortened() -> None:
    said = "What is streaming speech and why does it matter to a voice agent?"
    assert demo_reply(said, 1) == f"You said: {said[:-1]}."
    long = " ".join(f"w{i}" for i in range(QUOTED_WORDS + 1))
    quoted = " ".join(f"w{i}" for i in range(QUOTED_WORDS))
    assert demo_reply(long, 1) == f"You said, shortened: {quoted}..."


async def test_demo_model_stream_is_cancellable() -> None:
    agent = Agent(model=DemoModel(DemoConfig(tokens_per_second=5)), callback_handler=None)
    task = asyncio.create_task(_stream(agent, "slow"))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_demo_tokens_concatenate_to_the_text() -> None:
    text = demo_reply("anything at all", 10)
    tokens = demo_tokens(text)
    assert "".join(tokens) == text
    assert all(len(t.strip()) <= 4 for t in tokens)
    assert len(demo_reply("x", 10).split(". ")) >= 10


async def test_demo_model_refuses_structured_output() -> None:
    with pytest.raises(UnsupportedRequest):
        async for _ in DemoModel().structured_output(dict, []):  # type: ignore[arg-type]
            pass


def test_model_specs() -> None:
    assert isinstance(make_model("demo"), DemoModel)
    bedrock = make_model("bedrock:us.anthropic.claude-haiku-4-5-20251001-v1:0")
    assert isinstance(bedrock, BedrockModel)
    assert bedrock.get_config()["model_id"] == "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    openai = make_model("openai:http://127.0.0.1:8081/v1#llama-3.2-3b")
    assert isinstance(openai, OpenAIModel)
    assert openai.get_config()["model_id"] == "llama-3.2-3b"


def test_model_spec_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICE_AGENT_MODEL", "demo")
    assert isinstance(make_model(), DemoModel)


@pytest.mark.parametrize("spec", ["gpt", "bedrock:", "openai:http://x/v1", "demo:fast"])
def test_bad_model_specs_are_typed_errors(spec: str) -> None:
    with pytest.raises(ModelSpecError, match="unknown model spec"):
        make_model(spec)
