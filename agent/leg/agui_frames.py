"""AG-UI events as ``/ws`` text frames within AgentCore's WebSocket frame limit
(``agent.browser_leg.MAX_FRAME_BYTES``: its "32 KB" read as 32,000 bytes, docs/agent.md), as our
own ``/ws`` keeps its frames within it (``agent.events.fitted``).

``agui_frames`` gives an event's JSON as one frame when it fits, which is nearly always; else:

- ``TEXT_MESSAGE_CONTENT`` and ``TOOL_CALL_ARGS`` are deltas a client appends: split between
  characters into events of the same message or call, in order;
- a ``voice.audio`` chunk whose word timings make it too big is split with them: its PCM at whole
  samples and its words in runs, each piece a ``voice.audio`` of the same sentence (a client
  plays chunks back to back and gathers a sentence's words); one word too big keeps its times,
  its text cut and its ``spoken`` dropped;
- any other event is one message: its longest text (a tool's result, an error's message, a
  sentence) is cut to fit, ending in ``CUT``.

The ids a run echoes (``threadId``, ``runId``) are never cut: ``agui_input`` refuses a run whose
ids could not fit a frame.
"""

from __future__ import annotations

import base64
from typing import Any

from ag_ui.core import BaseEvent, CustomEvent, TextMessageContentEvent, ToolCallArgsEvent

from agent.browser_leg import MAX_FRAME_BYTES
from agent.events import CUT
from agent.leg.agui import VOICE_AUDIO, agui_json

BYTES_PER_SAMPLE = 2  # pcm_s16le


def agui_frames(event: BaseEvent, limit: int = MAX_FRAME_BYTES) -> list[str]:
    """``event`` as WebSocket text frames (AG-UI events' JSON) of at most ``limit`` bytes each."""
    frame = agui_json(event)
    if _size(frame) <= limit:
        return [frame]
    return [agui_json(part) for part in fitted(event, limit)]


def fitted(event: BaseEvent, limit: int = MAX_FRAME_BYTES) -> list[BaseEvent]:
    """``event`` as events whose JSON is at most ``limit`` bytes each (the module's rules)."""
    if _size(agui_json(event)) <= limit:
        return [event]
    if isinstance(event, TextMessageContentEvent | ToolCallArgsEvent) and len(event.delta) > 1:
        half = len(event.delta) // 2
        parts = (event.delta[:half], event.delta[half:])
        return [fit for part in parts for fit in fitted(_replaced(event, "delta", part), limit)]
    if isinstance(event, CustomEvent) and event.name == VOICE_AUDIO:
        return _fitted_audio(event, limit)
    return [_shortened(event, limit)]


def _size(frame: str) -> int:
    return len(frame.encode())


def _replaced(event: BaseEvent, field: str, value: object) -> BaseEvent:
    return event.model_copy(update={field: value})


def _audio_piece(event: CustomEvent, pcm: bytes, words: list[dict[str, Any]]) -> CustomEvent:
    """A ``voice.audio`` like ``event`` with ``pcm`` and ``words`` (none: no ``words``)."""
    value = {**event.value, "audio": base64.b64encode(pcm).decode("ascii")}
    value.pop("words", None)
    if words:
        value["words"] = words
    return CustomEvent(name=event.name, value=value)


def _fitted_audio(event: CustomEvent, limit: int) -> list[BaseEvent]:
    """A ``voice.audio`` too big for a frame: halves of its audio and words, in order, until
    each fits; a piece of one word (or of too little audio to halve) has its words shortened."""
    words: list[dict[str, Any]] = list(event.value.get("words") or [])
    pcm = base64.b64decode(event.value["audio"])
    samples = len(pcm) // BYTES_PER_SAMPLE
    if len(words) != 1 and samples >= 2:
        cut, at = len(words) // 2, samples // 2 * BYTES_PER_SAMPLE
        halves = ((pcm[:at], words[:cut]), (pcm[at:], words[cut:]))
        pieces = [_audio_piece(event, part, run) for part, run in halves]
        return [fit for piece in pieces for fit in fitted(piece, limit)]
    most = max((len(word["text"]) for word in words), default=0)
    while most > 0:  # each word's text at most ``most`` characters, halved until it fits
        short = [_short_word(word, most) for word in words]
        piece = _audio_piece(event, pcm, short)
        if _size(agui_json(piece)) <= limit:
            return [piece]
        most //= 2
    raise ValueError(f"a voice.audio of {len(words)} words cannot fit a {limit}-byte frame")


def _short_word(word: dict[str, Any], most: int) -> dict[str, Any]:
    """``word`` without ``spoken``, its text at most ``most`` characters (``CUT`` last if cut)."""
    text: str = word["text"]
    short = {key: value for key, value in word.items() if key != "spoken"}
    short["text"] = text if len(text) <= most else text[: max(0, most - 1)] + CUT
    return short


def _texts(event: BaseEvent) -> dict[tuple[str, str | None], str]:
    """The event's texts by where they are: a field, or a key of a custom event's value."""
    texts: dict[tuple[str, str | None], str] = {
        (name, None): value
        for name, value in event.__dict__.items()
        if isinstance(value, str) and name != "type"
    }
    if isinstance(event, CustomEvent) and isinstance(event.value, dict):
        for key, value in event.value.items():
            if isinstance(value, str):
                texts["value", key] = value
    return texts


def _with_text(event: BaseEvent, where: tuple[str, str | None], text: str) -> BaseEvent:
    field, key = where
    if key is None:
        return _replaced(event, field, text)
    return _replaced(event, field, {**getattr(event, field), key: text})


def _shortened(event: BaseEvent, limit: int) -> BaseEvent:
    """``event`` with its longest text cut (``CUT`` last) so that its JSON fits ``limit``.

    One cut is enough: it drops as many bytes of the text's UTF-8 as the JSON is over, and no
    character takes fewer bytes in JSON than in UTF-8 (an escape takes more), so the JSON loses
    at least as much. It is still over only when the rest of the event is, with no text left.
    """
    texts = _texts(event)
    if not texts:
        raise ValueError(f"a {event.type} event too big for a {limit}-byte frame has no text")
    where = max(texts, key=lambda place: _size(texts[place]))
    text = texts[where]
    over = _size(agui_json(event)) - limit + _size(CUT)
    keep = text.encode()[: max(0, _size(text) - over)].decode(errors="ignore")
    shortened = _with_text(event, where, keep + CUT)
    if _size(agui_json(shortened)) > limit:
        raise ValueError(f"a {event.type} event cannot be cut to a {limit}-byte frame")
    return shortened
