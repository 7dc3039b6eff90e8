"""A turn's events as AG-UI events, built with ag-ui-protocol's types (docs/agui.md).

``AguiTranslator`` is sans-I/O: each of our events in, the AG-UI events it becomes out, in order.
The run opens with ``RUN_STARTED`` and a ``voice.start`` custom event, and ends with
``RUN_FINISHED`` (its outcome ``cancelled`` when a newer run on the thread superseded it) or,
when the LLM failed, ``RUN_ERROR``. Text streams as ``TEXT_MESSAGE_START``/``CONTENT``/``END``,
one message per stretch of text between tool calls; a tool call is ``TOOL_CALL_START``,
``TOOL_CALL_ARGS`` and ``TOOL_CALL_END`` when it starts running, and ``TOOL_CALL_RESULT`` when
it returns, so the words before it (flushed and spoken at once) play while it runs. Speech is
``CUSTOM`` events, interleaved with the text as the turn makes them: ``voice.sentence`` (a
sentence went to synthesis), ``voice.audio`` (at most 100 ms of its audio, base64; the word
timings that came before it, if any, ride on it), ``voice.sentence.end``, ``voice.error`` (a problem
the run goes on after) and ``voice.metrics``. ``agui_events`` runs one over a turn's events;
closing it stops the turn, and a failure of the stream itself is the run's ``RUN_ERROR``
(``internal_error``), its open text closed first, after a ``RUN_STARTED`` if none went out.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.core.version import PROTOCOL_VERSION
from ag_ui.encoder import EventEncoder

from agent.events import (
    AudioDelta,
    ErrorEvent,
    Event,
    Segment,
    SegmentEnd,
    SegmentMarks,
    TextDelta,
    ToolEnd,
    ToolStart,
    TurnEnd,
    TurnMetrics,
    TurnStart,
)
from agent.leg.agui_input import AguiRun
from agent.leg.hooks import TurnEvents
from tts_protocol import SAMPLE_RATE, Word

log = logging.getLogger("agent.agui")

VOICE_START = "voice.start"
VOICE_SENTENCE = "voice.sentence"
VOICE_AUDIO = "voice.audio"
VOICE_SENTENCE_END = "voice.sentence.end"
VOICE_ERROR = "voice.error"
VOICE_METRICS = "voice.metrics"
RUN_FAILURES = frozenset({"llm_failed"})  # our errors that fail the run (RUN_ERROR at its end)
CHANNELS = 1
ENCODER = EventEncoder()


def _message_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


def _words(words: tuple[Word, ...]) -> list[dict[str, object]]:
    """Word timings in AG-UI's case: ms from the sentence's audio start."""
    return [
        {"text": w.text, "startMs": w.start_ms, "endMs": w.end_ms}
        | ({} if w.spoken is None else {"spoken": w.spoken})
        for w in words
    ]


def encode_agui(event: BaseEvent) -> bytes:
    """One SSE message carrying an AG-UI event, by ag-ui-protocol's own ``EventEncoder``."""
    return ENCODER.encode(event).encode()


def agui_json(event: BaseEvent) -> str:
    """An AG-UI event as one WebSocket text frame: its JSON (camelCase, unset fields left out)."""
    return event.model_dump_json(by_alias=True)


def run_started(thread_id: str, run_id: str) -> RunStartedEvent:
    """A run's first event."""
    return RunStartedEvent(thread_id=thread_id, run_id=run_id, protocol_version=PROTOCOL_VERSION)


def refused(thread_id: str, run_id: str, code: str, message: str) -> list[BaseEvent]:
    """A run refused before its turn started: ``RUN_STARTED`` then ``RUN_ERROR``."""
    return [run_started(thread_id, run_id), RunErrorEvent(message=message, code=code)]


class AguiTranslator:
    """One run's translation: our events in, AG-UI events out (``translate``)."""

    def __init__(self, run: AguiRun) -> None:
        self._run = run
        self._message: str | None = None  # the open text message
        self._last_message: str | None = None  # the latest text message, a tool call's parent
        self._words: dict[int, tuple[Word, ...]] = {}  # timings waiting for their audio
        self._failure: ErrorEvent | None = None
        self._cancelled = False
        self.started = False  # RUN_STARTED went out
        self.finished = False  # RUN_FINISHED or RUN_ERROR went out

    def translate(self, event: Event) -> list[BaseEvent]:
        """What ``event`` becomes on AG-UI (often nothing more than a custom event)."""
        match event:
            case TextDelta():
                return self._text(event)
            case AudioDelta():
                return [self._audio(event)]
            case Segment(seq=seq, text=text):
                return [self._custom(VOICE_SENTENCE, {"segmentId": seq, "text": text})]
            case SegmentMarks(seq=seq, words=words):
                self._words[seq] = self._words.get(seq, ()) + words
                return []
            case SegmentEnd(seq=seq, audio_ms=audio_ms):
                value = {"segmentId": seq, "audioMs": audio_ms}
                return [self._custom(VOICE_SENTENCE_END, value)]
            case ToolStart():
                return self._tool_start(event)
            case ToolEnd():
                return [self._tool_end(event)]
            case ErrorEvent():
                return self._error(event)
            case TurnStart():
                return self._started(event)
            case TurnMetrics():
                return [self._custom(VOICE_METRICS, self._metrics(event))]
            case TurnEnd():
                return self._ended()
        return []

    @staticmethod
    def _custom(name: str, value: dict[str, Any]) -> CustomEvent:
        return CustomEvent(name=name, value=value)

    def _started(self, event: TurnStart) -> list[BaseEvent]:
        run = self._run
        voice = {
            "turnId": event.turn_id,
            "format": run.audio_format,
            "sampleRate": SAMPLE_RATE,
            "channels": CHANNELS,
        }
        self.started = True
        return [run_started(run.thread_id, run.run_id), self._custom(VOICE_START, voice)]

    def _text(self, event: TextDelta) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        if self._message is None:
            self._message = self._last_message = _message_id()
            events.append(TextMessageStartEvent(message_id=self._message, role="assistant"))
        events.append(TextMessageContentEvent(message_id=self._message, delta=event.text))
        return events

    def _close_text(self) -> list[BaseEvent]:
        message, self._message = self._message, None
        return [] if message is None else [TextMessageEndEvent(message_id=message)]

    def _audio(self, event: AudioDelta) -> CustomEvent:
        value: dict[str, Any] = {
            "segmentId": event.seq,
            "audio": base64.b64encode(event.pcm).decode("ascii"),
            "format": self._run.audio_format,
            "sampleRate": SAMPLE_RATE,
            "channels": CHANNELS,
        }
        if (words := self._words.pop(event.seq, None)) is not None:
            value["words"] = _words(words)
        return self._custom(VOICE_AUDIO, value)

    def _tool_start(self, event: ToolStart) -> list[BaseEvent]:
        events = self._close_text()  # a tool call is not inside a text message
        events.append(
            ToolCallStartEvent(
                tool_call_id=event.id,
                tool_call_name=event.name,
                parent_message_id=self._last_message,
            )
        )
        if event.args:
            events.append(ToolCallArgsEvent(tool_call_id=event.id, delta=event.args))
        events.append(ToolCallEndEvent(tool_call_id=event.id))
        return events

    def _tool_end(self, event: ToolEnd) -> ToolCallResultEvent:
        content = event.result or f"the tool call was {event.status}"
        return ToolCallResultEvent(
            message_id=_message_id(),
            tool_call_id=event.id,
            content=content,
            role="tool",
            metadata={"status": event.status, "durationMs": event.duration_ms},
        )

    def _error(self, event: ErrorEvent) -> list[BaseEvent]:
        if event.code == "superseded":
            self._cancelled = True
        elif event.code in RUN_FAILURES and self._failure is None:
            self._failure = event
        return [self._custom(VOICE_ERROR, {"code": event.code, "message": event.message})]

    @staticmethod
    def _metrics(event: TurnMetrics) -> dict[str, Any]:
        return {
            "ttftMs": event.ttft_ms,
            "ttfaMs": event.ttfa_ms,
            "totalMs": event.total_ms,
            "segments": event.segments,
            "audioMs": event.audio_ms,
            "toolCalls": event.tool_calls,
            "toolMs": event.tool_ms,
        }

    def cancel(self) -> list[BaseEvent]:
        """The run stopped by its client before its end (a new input on its socket): the end
        it did not reach, ``RUN_FINISHED`` with the outcome ``cancelled`` (nothing if it never
        started or already ended)."""
        if not self.started or self.finished:
            return []
        self._cancelled, self._failure = True, None
        return self._ended()

    def failed(self, exc: Exception) -> list[BaseEvent]:
        """The run's end when its turn's stream itself failed: ``RUN_ERROR``
        (``internal_error``), after ``RUN_STARTED`` if it had not gone out and with the open
        text closed; nothing once the run ended."""
        if self.finished:
            return []
        events: list[BaseEvent] = []
        if not self.started:
            events.append(run_started(self._run.thread_id, self._run.run_id))
        self.finished = True  # nothing more goes out: ``cancel`` reads no further
        events += self._close_text()
        message = f"the run failed: {type(exc).__name__}"
        events.append(RunErrorEvent(message=message, code="internal_error"))
        return events

    def _ended(self) -> list[BaseEvent]:
        self.finished = True
        events = self._close_text()
        if self._failure is not None:
            events.append(RunErrorEvent(message=self._failure.message, code=self._failure.code))
            return events
        run = self._run
        outcome = RunFinishedCancelledOutcome() if self._cancelled else None
        events.append(RunFinishedEvent(thread_id=run.thread_id, run_id=run.run_id, outcome=outcome))
        return events


async def agui_events(
    turn_events: TurnEvents, translator: AguiTranslator
) -> AsyncGenerator[BaseEvent, None]:
    """A run's AG-UI events from its turn's; closing them closes the turn's (which stops it).
    A failure of the stream itself ends the run with ``RUN_ERROR`` (``internal_error``)."""
    async with contextlib.aclosing(turn_events):
        try:
            async for event in turn_events:
                for translated in translator.translate(event):
                    yield translated
        except Exception as exc:  # a bug, or the relay's loop gone: said, never a traceback
            log.exception("an AG-UI run failed")
            for translated in translator.failed(exc):
                yield translated
