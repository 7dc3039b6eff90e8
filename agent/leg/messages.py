"""The client's messages on ``/ws``, each parsed once into one typed union.

JSON objects come in text or binary frames alike: SageMaker and AgentCore hand a client's text
to the container as binary frames (the field report's lesson). A binary frame that starts with
``MIC_MAGIC`` is microphone audio (``MicFrame``); no JSON text can start so. Pure: a frame in,
a ``ClientMessage`` or a typed ``BadRequest`` out; ``agent.leg.socket`` does the I/O.

A ``prompt`` becomes a ``TurnRequest`` here; ``Prompt.over`` fills the fields it left out from
the socket's ``Defaults`` (its ``config`` messages and the last playback report).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from agent.browser_leg import MAX_MESSAGE_BYTES, MIC_MAGIC, MIC_SAMPLE_RATE
from agent.listening.listener import LISTEN_MODES, ListenMode
from agent.listening.settings import SAMPLE_FORMAT
from agent.requests import (
    OPTION_FIELDS,
    PLAYBACK_FIELDS,
    BadRequest,
    PlaybackReport,
    TurnRequest,
    check_fields,
    check_options,
    decode_json,
    parse_playback_report,
    parse_request,
)

PROMPT = "prompt"
CANCEL = "cancel"
CONFIG = "config"
PLAYED = "heard"  # a playback report: where the client stopped playing a turn's audio
LISTEN = "listen"
LISTEN_STOP = "listen.stop"
TALK_START = "talk.start"
TALK_END = "talk.end"
AUDIO = "audio"  # not a JSON type: what a refused microphone frame is said to reply to
MESSAGE_TYPES = (PROMPT, CANCEL, CONFIG, PLAYED, LISTEN, LISTEN_STOP, TALK_START, TALK_END)


@dataclass(frozen=True, slots=True)
class Prompt:
    """``prompt``: start a turn. ``given`` names the fields the message set; the rest come
    from the socket's defaults (``over``)."""

    request: TurnRequest
    given: frozenset[str]

    def over(self, defaults: TurnRequest) -> TurnRequest:
        """The turn asked for: this message's fields, the defaults' for those it left out."""
        left_out = {
            f: getattr(defaults, f) for f in (*OPTION_FIELDS, PLAYED) if f not in self.given
        }
        return replace(self.request, **left_out)


@dataclass(frozen=True, slots=True)
class Cancel:
    """``cancel``: stop the running turn (barge-in by button)."""

    type: ClassVar[str] = CANCEL


@dataclass(frozen=True, slots=True)
class Config:
    """``config``: defaults for later prompts. ``options``: the typed value of each field it
    names (null: the field's own default); ``sent``: the same fields as sent (null unsets)."""

    options: Mapping[str, object]
    sent: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class Listen:
    """``listen``: start listening in ``mode`` (or switch to it)."""

    type: ClassVar[str] = LISTEN

    mode: ListenMode


@dataclass(frozen=True, slots=True)
class ListenStop:
    """``listen.stop``: stop listening; an utterance in progress is dropped."""

    type: ClassVar[str] = LISTEN_STOP


@dataclass(frozen=True, slots=True)
class TalkStart:
    """``talk.start``: push-to-talk pressed."""

    type: ClassVar[str] = TALK_START


@dataclass(frozen=True, slots=True)
class TalkEnd:
    """``talk.end``: push-to-talk released."""

    type: ClassVar[str] = TALK_END


@dataclass(frozen=True, slots=True)
class MicFrame:
    """A binary microphone frame: its PCM (s16le mono at ``MIC_SAMPLE_RATE``), unchecked."""

    pcm: bytes


ClientMessage = (
    Prompt | Cancel | Config | PlaybackReport | Listen | ListenStop | TalkStart | TalkEnd | MicFrame
)
_BARE = {kind.type: kind() for kind in (Cancel, ListenStop, TalkStart, TalkEnd)}


@dataclass(frozen=True, slots=True)
class Defaults:
    """What a socket's next prompt starts from: its ``config`` defaults, typed (``request``,
    whose prompt is unused) and as sent (``sent``, echoed by the ``config`` answer), and the
    last playback report (``request.heard``), which goes with the next prompt only."""

    request: TurnRequest = field(default_factory=lambda: TurnRequest(""))
    sent: Mapping[str, object] = field(default_factory=dict)

    def configured(self, config: Config) -> Defaults:
        """These defaults with ``config`` applied."""
        sent = {k: v for k, v in {**self.sent, **config.sent}.items() if v is not None}
        return Defaults(replace(self.request, **config.options), sent)

    def played(self, report: PlaybackReport | None) -> Defaults:
        """These defaults with ``report`` (None: taken) as the next prompt's playback report."""
        return replace(self, request=replace(self.request, heard=report))

    def resumed(self, turn_id: str | None) -> Defaults:
        """These defaults without the report of turn ``turn_id``'s pause: it played on."""
        heard = self.request.heard
        return self if heard is None or heard.turn_id != turn_id else self.played(None)

    def turn(self, prompt: Prompt | str) -> TurnRequest:
        """The turn a typed prompt, or a transcript's text, asks for."""
        if isinstance(prompt, Prompt):
            return prompt.over(self.request)
        return replace(self.request, prompt=prompt)


class MessageRefused(BadRequest):
    """A message that cannot be taken; ``in_reply_to`` is its type (None: it has none)."""

    def __init__(self, refused: BadRequest, in_reply_to: str | None) -> None:
        super().__init__(refused.code, refused.message)
        self.in_reply_to = in_reply_to


def parse_message(data: str | bytes) -> ClientMessage:
    """A client message, from a text or a binary frame; raises ``MessageRefused``."""
    if isinstance(data, bytes) and data.startswith(MIC_MAGIC):
        return MicFrame(data[len(MIC_MAGIC) :])
    try:
        message = _object(data)
    except BadRequest as exc:
        raise MessageRefused(exc, None) from exc
    try:
        return _PARSERS[message["type"]](message)
    except BadRequest as exc:
        raise MessageRefused(exc, message["type"]) from exc


def _object(data: str | bytes) -> dict[str, Any]:
    """The JSON object of a message, with a known ``type``; raises ``BadRequest``."""
    # a lone surrogate (only a caller in-process can send one) is kept, then is not UTF-8 below
    raw = data.encode(errors="surrogatepass") if isinstance(data, str) else data
    if len(raw) > MAX_MESSAGE_BYTES:
        raise BadRequest("message_too_large", f"a message is at most {MAX_MESSAGE_BYTES} bytes")
    message = decode_json(raw, "the message")
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise BadRequest("invalid_message", "a message is a JSON object with a string 'type'")
    kind = message["type"]
    if kind not in MESSAGE_TYPES:
        known = ", ".join(MESSAGE_TYPES)
        raise BadRequest("unknown_type", f"unknown message type {kind!r}; try {known}")
    return message


def parse_prompt(message: dict[str, Any]) -> Prompt:
    """A ``prompt``: its fields are a POST body's (``parse_request``)."""
    fields = {k: v for k, v in message.items() if k != "type"}
    return Prompt(parse_request(fields), frozenset(fields))


def parse_config(message: dict[str, Any]) -> Config:
    """A ``config``: checked by the rules of a prompt's fields (``check_options``); a bad value
    is ``invalid_config``, its message the field's own rule."""
    check_fields(message, ("type", *OPTION_FIELDS))
    sent = {name: message[name] for name in OPTION_FIELDS if name in message}
    try:
        typed = check_options({k: v for k, v in sent.items() if v is not None})._asdict()
    except BadRequest as exc:
        raise BadRequest("invalid_config", exc.message) from exc
    return Config({name: typed[name] for name in sent}, sent)


def parse_played(message: dict[str, Any]) -> PlaybackReport:
    """A ``heard``: a playback report, refused now rather than with the next prompt."""
    check_fields(message, ("type", *PLAYBACK_FIELDS))
    return parse_playback_report({k: v for k, v in message.items() if k != "type"})


def parse_listen(message: dict[str, Any]) -> Listen:
    """A ``listen``: its mode, and the audio format the client will send (ours only)."""
    check_fields(message, ("type", "mode", "sample_rate", "format"))
    mode = message.get("mode")
    if mode not in LISTEN_MODES:
        raise BadRequest("invalid_listen", f"'mode' must be one of {', '.join(LISTEN_MODES)}")
    rate = message.get("sample_rate", MIC_SAMPLE_RATE)
    sample_format = message.get("format", SAMPLE_FORMAT)
    if rate != MIC_SAMPLE_RATE or sample_format != SAMPLE_FORMAT:
        raise BadRequest(
            "unsupported_audio_format",
            f"audio must be {SAMPLE_FORMAT} mono at {MIC_SAMPLE_RATE} Hz, "
            f"not {sample_format!r} at {rate!r}",
        )
    return Listen(mode)


def _bare(message: dict[str, Any]) -> ClientMessage:
    """A message with no field but its type."""
    check_fields(message, ("type",))
    return _BARE[message["type"]]


_PARSERS = {
    PROMPT: parse_prompt,
    CANCEL: _bare,
    CONFIG: parse_config,
    PLAYED: parse_played,
    LISTEN: parse_listen,
    LISTEN_STOP: _bare,
    TALK_START: _bare,
    TALK_END: _bare,
}
