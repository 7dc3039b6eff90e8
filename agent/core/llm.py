"""Language models for the agent, chosen by a spec string (``VOICE_AGENT_MODEL`` / ``--model``).

- ``demo``: :class:`DemoModel`, an offline strands ``Model`` that streams a deterministic
  spoken reply at a fixed token rate (the default; tests and benchmarks use it).
- ``bedrock:<model-id>``: strands ``BedrockModel`` (the AgentCore default).
- ``openai:<base-url>#<model>``: any OpenAI-compatible server (llama.cpp, vLLM, Ollama).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent

T = TypeVar("T")

PERSONA = "You are a friendly voice assistant."
# What speech needs of any agent's prompt (``agent.core.factory.voiced`` appends it to yours).
SPEECH_RULES = (
    "Your replies are spoken aloud: answer in short, plain "
    "sentences, without markdown, lists, code, links or emoji. Keep answers brief unless asked "
    "for detail. A note in square brackets at the end of one of your earlier replies means the "
    "user interrupted you there and did not hear the rest: carry on from what they heard, and "
    "never write such notes yourself."
)
SYSTEM_PROMPT = f"{PERSONA} {SPEECH_RULES}"  # the built-in agent's

# Sentences the demo model draws from, chosen deterministically from the prompt.
_DEMO_SENTENCES = (
    "Streaming speech means you hear the first sentence while the rest is still being written.",
    "Each sentence is sent to the speech server the moment it is complete.",
    "The audio comes back in small pieces over one connection that stays open.",
    "Your browser plays every piece as soon as it arrives, without gaps between sentences.",
    "A batch system would wait for the whole answer before saying a single word.",
    "Kokoro is a small speech model with eighty two million parameters.",
    "On a graphics card it speaks many times faster than real time.",
    "On this computer's processor it still keeps ahead of the listener.",
    "If you interrupt me, the rest of this answer is cancelled at once.",
    "Time to first audio is the number that tells you how responsive a voice agent feels.",
    "The segmenter avoids cutting sentences at abbreviations like Dr. Smith or 3.5 percent.",
    "Every figure quoted here was measured by a script in the repository.",
)
DEMO_MOST_SENTENCES = len(_DEMO_SENTENCES) + 1  # what the prompt was, then every sentence
QUOTED_WORDS = 40  # a longer prompt is quoted this far, and said to be shortened
_TOKEN = re.compile(r"\s*\S{1,4}")  # roughly the size of an LLM sub-word token


class UnsupportedRequest(RuntimeError):
    """The demo model was asked for something only a real LLM can do."""


@dataclass(frozen=True, slots=True)
class DemoConfig:
    """Timing and length of the demo reply (defaults resemble a hosted LLM)."""

    sentences: int = 4
    tokens_per_second: float = 40.0
    first_token_delay_s: float = 0.3


def demo_reply(prompt: str, sentences: int) -> str:
    """The deterministic reply the demo model gives to ``prompt``."""
    words = prompt.split()
    topic = " ".join(words[:QUOTED_WORDS]).rstrip(".?!,;:") or "nothing in particular"
    said = (
        f"You said: {topic}." if len(words) <= QUOTED_WORDS else f"You said, shortened: {topic}..."
    )
    start = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % len(_DEMO_SENTENCES)
    picked = [_DEMO_SENTENCES[(start + i) % len(_DEMO_SENTENCES)] for i in range(sentences - 1)]
    return " ".join([said, *picked])


def demo_tokens(text: str) -> list[str]:
    """Cut ``text`` into token-sized deltas whose concatenation is ``text``."""
    return _TOKEN.findall(text)


def last_user_text(messages: Messages) -> str:
    """The text of the latest user message."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return " ".join(block["text"] for block in message["content"] if "text" in block)
    return ""


class DemoModel(Model):
    """An offline strands model: a fixed-rate stream of a reply derived from the prompt.

    It is not a language model; it exists so that the local stack, the tests and the
    benchmarks run with no account and no network, with LLM timing held constant.
    """

    def __init__(self, config: DemoConfig | None = None) -> None:
        self._demo = config or DemoConfig()

    def update_config(self, **model_config: Any) -> None:
        """Change ``sentences``, ``tokens_per_second`` or ``first_token_delay_s``."""
        self._demo = replace(self._demo, **model_config)

    def get_config(self) -> DemoConfig:
        """The current timing configuration."""
        return self._demo

    async def structured_output(  # type: ignore[override]
        self, output_model: type[T], prompt: Messages, system_prompt: str | None = None, **_: Any
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        """Not available: the demo model only speaks."""
        raise UnsupportedRequest("the demo model cannot produce structured output")
        yield {}  # pragma: no cover - makes this an async generator

    async def stream(  # type: ignore[override]
        self,
        messages: Messages,
        tool_specs: list[Any] | None = None,
        system_prompt: str | None = None,
        **_: Any,
    ) -> AsyncIterable[StreamEvent]:
        """Stream the reply as Bedrock-style events, one text delta per token."""
        config = self._demo
        tokens = demo_tokens(demo_reply(last_user_text(messages), config.sentences))
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        await asyncio.sleep(config.first_token_delay_s)
        interval = 1.0 / config.tokens_per_second
        loop = asyncio.get_running_loop()
        due = loop.time()
        for token in tokens:
            yield {"contentBlockDelta": {"delta": {"text": token}}}
            due += interval
            await asyncio.sleep(max(0.0, due - loop.time()))
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}
        yield {
            "metadata": {
                "usage": {"inputTokens": 0, "outputTokens": len(tokens), "totalTokens": 0},
                "metrics": {"latencyMs": 0},
            }
        }


class ModelSpecError(ValueError):
    """The model spec string is malformed."""


def parse_model_spec(spec: str) -> tuple[str, str]:
    """``spec`` as its kind (``demo``, ``bedrock``, ``openai``) and the rest; raises
    ``ModelSpecError`` for anything else. Nothing is built, nothing imported."""
    kind, _, rest = spec.partition(":")
    if (
        (kind, rest) == ("demo", "")
        or (kind == "bedrock" and rest)
        or (kind == "openai" and "#" in rest)
    ):
        return kind, rest
    raise ModelSpecError(
        f"unknown model spec {spec!r}; use 'demo', 'bedrock:<model-id>' "
        "or 'openai:<base-url>#<model>'"
    )


def make_model(spec: str | None = None) -> Model:
    """Build the model named by ``spec`` (default: ``VOICE_AGENT_MODEL`` or ``demo``)."""
    kind, rest = parse_model_spec(spec or os.environ.get("VOICE_AGENT_MODEL") or "demo")
    if kind == "demo":
        return DemoModel()
    if kind == "bedrock":
        from strands.models import BedrockModel

        return BedrockModel(model_id=rest, streaming=True)
    from strands.models.openai import OpenAIModel

    base_url, _, model_id = rest.rpartition("#")
    api_key = os.environ.get("OPENAI_API_KEY", "not-needed")
    return OpenAIModel(client_args={"base_url": base_url, "api_key": api_key}, model_id=model_id)
