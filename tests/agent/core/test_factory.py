"""Your own agent, voiced: the factory's checks (each bad one a typed error at start), what
``voiced`` adds and keeps, one agent per conversation, cleaned up when it is dropped."""

from __future__ import annotations

from dataclasses import replace

import pytest
from strands import Agent, tool
from strands.handlers.callback_handler import PrintingCallbackHandler
from strands.models.openai import OpenAIModel

from agent.config import AgentConfig
from agent.core.factory import AgentFactoryError, VoiceFactory, call_factory, load_factory
from agent.core.llm import SPEECH_RULES, SYSTEM_PROMPT, DemoModel, ModelSpecError
from agent.core.service import VoiceAgent
from agent.core.tool_calls import Filler

NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port
MADE: list[str] = []  # the conversations a factory of this module was called for


@tool
def shout(text: str) -> str:
    """Say ``text`` loudly."""
    return text.upper()


def my_agent() -> Agent:
    return Agent(model=DemoModel(), tools=[shout], system_prompt="You are a pirate.")


def per_conversation(conversation: str) -> Agent:
    MADE.append(conversation)
    return Agent(model=DemoModel(), callback_handler=PrintingCallbackHandler())


SHARED = Agent(model=DemoModel())
NOT_CALLABLE = 42


def returns_text() -> str:
    return "an agent"


def raises() -> Agent:
    raise RuntimeError("no credentials")


def two_arguments(conversation: str, user: str) -> Agent:
    raise AssertionError("never called")


def same_agent() -> Agent:
    return SHARED


@pytest.mark.parametrize(
    ("factory", "says"),
    [
        (
            "nowhere_at_all:make",
            r"no module 'nowhere_at_all' \(is its folder on the path\? "
            r"run from your project's root\)",
        ),
        ("tests.agent.core.test_factory:nothing", "has no 'nothing'"),
        ("tests.agent.core.test_factory:NOT_CALLABLE", "is a int, not a function"),
        ("tests.agent.core.test_factory:returns_text", "returned a str, not a strands Agent"),
        (
            "tests.agent.core.test_factory:raises",
            "agent factory tests.agent.core.test_factory:raises failed: RuntimeError: no "
            "credentials",
        ),
        (raises, "agent factory raises failed: RuntimeError"),  # a function: its name
        (two_arguments, "agent factory two_arguments must take no argument or one"),
        (NOT_CALLABLE, "agent factory 42 is not callable"),
        ("tests.agent.core.test_factory:two_arguments", "must take no argument or one"),
        ("not a spec", "is not package.module:function"),
        (same_agent, None),  # checked below: the second call is refused
    ],
)
def test_a_bad_factory_is_a_typed_error_at_start(factory: object, says: str | None) -> None:
    if says is None:
        checked = VoiceFactory.check(factory)  # type: ignore[arg-type]
        checked("one")
        with pytest.raises(AgentFactoryError, match="already in use: build a new one per call"):
            checked("two")
        return
    with pytest.raises(AgentFactoryError, match=says):
        VoiceAgent(AgentConfig(agent_factory=factory, tts_url=NOWHERE))  # type: ignore[arg-type]


def test_a_bad_spec_in_the_environment_names_its_variable() -> None:
    with pytest.raises(ValueError, match=r"VOICE_AGENT_FACTORY must be package\.module:function"):
        AgentConfig.from_env({"VOICE_AGENT_FACTORY": "my_agent.py"})
    spec = "tests.agent.core.test_factory:my_agent"
    assert AgentConfig.from_env({"VOICE_AGENT_FACTORY": spec}).agent_factory == spec


def test_a_bad_model_spec_is_still_its_own_error() -> None:
    with pytest.raises(ModelSpecError):
        VoiceAgent(AgentConfig(model="gpt", tts_url=NOWHERE))


def test_voiced_appends_the_speech_rules_and_keeps_the_tools() -> None:
    factory = VoiceFactory.check(load_factory("tests.agent.core.test_factory:my_agent"))
    agent = factory("c1")
    assert agent.system_prompt == f"You are a pirate.\n\n{SPEECH_RULES}"
    assert agent.tool_names == ["shout"]
    assert isinstance(agent.model, DemoModel)


def test_the_built_in_agent_has_the_built_in_prompt() -> None:
    agent = VoiceFactory.check(None, "demo")("c1")
    assert agent.system_prompt == SYSTEM_PROMPT and agent.tool_names == []
    assert isinstance(agent.model, DemoModel)
    built_in = VoiceFactory.check(None)  # the demo model unless told
    assert built_in.name == "demo" and isinstance(built_in("c2").model, DemoModel)


class Raising:
    """A callable object: no ``__qualname__``, so its repr names it in errors."""

    def __call__(self) -> Agent:
        raise RuntimeError("no credentials")

    def __repr__(self) -> str:
        return "<raising factory>"


class TwoArguments:
    def __call__(self, conversation: str, user: str) -> Agent:
        raise AssertionError("never called")

    def __repr__(self) -> str:
        return "<two-argument factory>"


def test_a_factory_without_a_name_is_named_by_its_repr() -> None:
    with pytest.raises(AgentFactoryError, match="agent factory <raising factory> failed"):
        VoiceFactory.check(Raising())
    with pytest.raises(AgentFactoryError, match="agent factory <two-argument factory> must"):
        call_factory(TwoArguments(), "c")


def test_call_factory_passes_the_conversation_only_to_a_factory_that_takes_it() -> None:
    MADE.clear()
    assert isinstance(call_factory(per_conversation, "alice"), Agent) and MADE == ["alice"]
    assert isinstance(call_factory(my_agent, "bob"), Agent)  # takes nothing: given nothing
    with pytest.raises(AgentFactoryError, match="agent factory two_arguments must take"):
        call_factory(two_arguments, "c")


async def test_each_conversation_gets_its_own_agent_named_by_its_id() -> None:
    MADE.clear()
    voice_agent = VoiceAgent(AgentConfig(agent_factory=per_conversation, tts_url=NOWHERE))
    assert MADE == ["default"]  # the check at start
    first = voice_agent.conversations.get("alice").agent
    second = voice_agent.conversations.get("bob").agent
    assert voice_agent.conversations.get("alice").agent is first and first is not second
    assert MADE == ["default", "alice", "bob"]
    assert not isinstance(first.callback_handler, PrintingCallbackHandler)  # no stdout printing
    await voice_agent.aclose()


async def test_a_dropped_conversation_cleans_up_its_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    cleaned: list[str] = []
    monkeypatch.setattr(Agent, "cleanup", lambda self: cleaned.append(self.name))
    voice_agent = VoiceAgent(AgentConfig(agent_factory=my_agent, tts_url=NOWHERE))
    voice_agent.conversations._limit = 1
    voice_agent.conversations.get("alice").agent.name = "alice"
    voice_agent.conversations.get("bob").agent.name = "bob"  # alice is dropped
    assert cleaned == ["Strands Agents", "alice"]  # the start-up check's, then alice's
    await voice_agent.aclose()
    assert cleaned[-1] == "bob"


async def test_the_filler_settings_reach_the_conversations() -> None:
    config = AgentConfig.from_env(
        {"VOICE_AGENT_TOOL_FILLER": "One moment.", "VOICE_AGENT_TOOL_FILLER_S": "0.5"}
    )
    voice_agent = VoiceAgent(replace(config, tts_url=NOWHERE))
    assert voice_agent.conversations.get("c").current is None
    assert voice_agent.conversations._filler == Filler("One moment.", 0.5)
    assert VoiceAgent(AgentConfig(tts_url=NOWHERE)).conversations._filler is None  # off
    await voice_agent.aclose()


class Unreadable:
    """A callable whose signature cannot be read: it is called with nothing."""

    __signature__ = "not a signature"

    def __call__(self) -> Agent:
        return Agent(model=DemoModel())


def with_optional_arguments(conversation: str = "", user: str = "") -> Agent:
    MADE.append(conversation)
    return Agent(model=DemoModel())


def test_a_factory_whose_signature_cannot_be_read_is_called_with_nothing() -> None:
    assert isinstance(call_factory(Unreadable(), "c"), Agent)


def test_a_factory_with_only_optional_arguments_gets_the_conversation() -> None:
    MADE.clear()
    assert isinstance(call_factory(with_optional_arguments, "alice"), Agent)
    assert MADE == ["alice"]


def test_the_built_in_agent_is_on_the_model_it_is_given() -> None:
    factory = VoiceFactory.check(None, "openai:http://127.0.0.1:9/v1#local-model")  # no call
    assert factory.name == "openai:http://127.0.0.1:9/v1#local-model"
    model = factory("c").model
    assert isinstance(model, OpenAIModel) and model.config["model_id"] == "local-model"
