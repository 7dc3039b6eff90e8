"""Your own strands ``Agent``, voiced: the factory that builds one per conversation.

A factory is any callable that returns a new strands ``Agent`` (its model, tools, system
prompt, state), called either with no argument or with one, the conversation's id:

    def create_agent() -> Agent: ...
    def create_agent(conversation: str) -> Agent: ...

It is named in code (``AgentConfig(agent_factory=create_agent)``), or as
``package.module:function`` by ``VOICE_AGENT_FACTORY`` or ``voice-agent dev --agent``. A
conversation's agent is built when the conversation is first used, and cleaned up
(``Agent.cleanup``: MCP clients and other tool providers) when it is dropped. ``voiced`` adds
only what speech needs: the spoken-reply rules appended to the agent's system prompt (the
default persona's when it has none), the hooks that report its tool calls
(``agent/core/tool_calls.py``), and, in place of strands' default printing callback handler,
none (the service streams the text itself). Its tools are left as they are.

``VoiceFactory.check`` loads the factory and calls it once, at start, so that a bad one
(no such module or attribute, not callable, more than one required argument, not returning a
new ``Agent``) is an ``AgentFactoryError`` before anything else starts. Docs:
docs/your_agent.md.
"""

from __future__ import annotations

import importlib
import inspect
import json
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from strands import Agent
from strands.handlers.callback_handler import PrintingCallbackHandler, null_callback_handler
from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent

from agent.config import FACTORY_SPEC
from agent.core.llm import SPEECH_RULES, SYSTEM_PROMPT, make_model
from agent.core.tool_calls import running_calls

AgentFactory = Callable[[], Agent] | Callable[[str], Agent]
PROBE_CONVERSATION = "default"  # the id the start-up check passes to a factory that takes one

_voiced: weakref.WeakSet[Agent] = weakref.WeakSet()  # agents already given to a conversation


class AgentFactoryError(ValueError):
    """The agent factory cannot build a voiced ``Agent`` (named, with the reason)."""


def load_factory(spec: str) -> Callable[..., Any]:
    """The callable ``package.module:function`` names; ``AgentFactoryError`` if there is none."""
    if not FACTORY_SPEC.fullmatch(spec):
        raise AgentFactoryError(f"agent factory {spec!r} is not package.module:function")
    module_name, _, name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise AgentFactoryError(
            f"agent factory {spec!r}: no module {exc.name!r} (is its folder on the path? "
            "run from your project's root)"
        ) from exc
    factory = getattr(module, name, None)
    if factory is None:
        raise AgentFactoryError(f"agent factory {spec!r}: module {module_name!r} has no {name!r}")
    if not callable(factory):
        raise AgentFactoryError(
            f"agent factory {spec!r} is a {type(factory).__name__}, not a function"
        )
    return factory  # type: ignore[no-any-return]


def takes_conversation(factory: Callable[..., Any], name: str) -> bool:
    """Does ``factory`` take the conversation's id (one argument), or nothing?"""
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # no signature to read: call it with nothing
        return False
    varying = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    positional = [p for p in parameters if p.kind not in (p.KEYWORD_ONLY, p.VAR_KEYWORD)]
    required = [p for p in parameters if p.default is p.empty and p.kind not in varying]
    if len(required) > 1 or any(p.kind == p.KEYWORD_ONLY for p in required):
        raise AgentFactoryError(
            f"agent factory {name} must take no argument or one (the conversation's id), "
            f"not {inspect.signature(factory)}"
        )
    return bool(positional)


def call_factory(factory: Callable[..., Any], conversation: str) -> Any:
    """``factory(conversation)`` if it takes an argument, else ``factory()``."""
    name = getattr(factory, "__qualname__", repr(factory))
    return factory(conversation) if takes_conversation(factory, name) else factory()


def watch_tools(agent: Agent) -> None:
    """Report ``agent``'s tool calls to the turn that runs them (``running_calls``)."""
    agent.add_hook(_before_tool, BeforeToolCallEvent)
    agent.add_hook(_after_tool, AfterToolCallEvent)


def _before_tool(event: BeforeToolCallEvent) -> None:
    if (calls := running_calls()) is not None:
        args = json.dumps(event.tool_use.get("input", {}), default=str)
        calls.started(event.tool_use["name"], event.tool_use["toolUseId"], args)


def _after_tool(event: AfterToolCallEvent) -> None:
    if (calls := running_calls()) is not None:
        failed = event.exception is not None or event.result.get("status") == "error"
        status = "error" if failed else "ok"
        calls.ended(event.tool_use["toolUseId"], status, result_text(event.result))


def result_text(result: Mapping[str, Any]) -> str:
    """A strands tool result's content as the model reads it: its text blocks, and any JSON
    block as JSON, one per line."""
    parts = []
    for block in result.get("content", ()):
        if "text" in block:
            parts.append(str(block["text"]))
        elif "json" in block:
            parts.append(json.dumps(block["json"], default=str))
    return "\n".join(parts)


def voiced(agent: Agent) -> Agent:
    """``agent``, ready to speak: the speech rules after its system prompt, its tool calls
    reported, no printing callback handler. Its tools, model and state are left alone."""
    prompt = agent.system_prompt
    agent.system_prompt = SYSTEM_PROMPT if not prompt else f"{prompt}\n\n{SPEECH_RULES}"
    if isinstance(agent.callback_handler, PrintingCallbackHandler):
        agent.callback_handler = null_callback_handler
    watch_tools(agent)
    _voiced.add(agent)
    return agent


@dataclass(frozen=True, slots=True)
class VoiceFactory:
    """A checked factory: ``factory(conversation)`` builds that conversation's voiced agent."""

    build: Callable[..., Any]
    name: str
    takes_conversation: bool = False

    @classmethod
    def check(cls, factory: str | AgentFactory | None, model: str = "demo") -> VoiceFactory:
        """The factory named (None: the built-in agent on ``model``), called once to check it;
        raises ``AgentFactoryError`` (``ModelSpecError`` for a bad ``model``)."""
        if isinstance(factory, VoiceFactory):
            return factory
        if factory is None:
            make_model(model)  # a bad spec is its own error (ModelSpecError)
            checked = cls(lambda: Agent(model=make_model(model), callback_handler=None), model)
        elif isinstance(factory, str):
            checked = cls(load_factory(factory), factory)
        elif callable(factory):
            checked = cls(factory, getattr(factory, "__qualname__", repr(factory)))
        else:
            raise AgentFactoryError(f"agent factory {factory!r} is not callable")
        takes = takes_conversation(checked.build, checked.name)  # or a typed error
        checked = replace(checked, takes_conversation=takes)
        probe = checked._built(PROBE_CONVERSATION)
        probe.cleanup()
        return checked

    def _built(self, conversation: str) -> Agent:
        try:
            agent = self.build(conversation) if self.takes_conversation else self.build()
        except Exception as exc:
            raise AgentFactoryError(
                f"agent factory {self.name} failed: {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(agent, Agent):
            raise AgentFactoryError(
                f"agent factory {self.name} returned a {type(agent).__name__}, not a strands Agent"
            )
        if agent in _voiced:
            raise AgentFactoryError(
                f"agent factory {self.name} returned an Agent already in use: build a new one "
                "per call (each conversation has its own history)"
            )
        return agent

    def __call__(self, conversation: str) -> Agent:
        return voiced(self._built(conversation))
