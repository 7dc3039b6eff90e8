"""An AG-UI ``RunAgentInput``, checked once: the run's ids and the ``TurnRequest`` it asks for.

``parse_run_input`` validates a decoded body with ag-ui-protocol's own model; what fails it is the
typed ``invalid_run_input`` (a 400 before any stream, or a ``RUN_ERROR`` frame on ``/ws``).
``run_of`` reads the run: the thread is the conversation, the latest message (a user's) is the
prompt, and ``forwardedProps.speech`` holds the speech options (``voice``, ``speed``, ``marks``,
``mode``, ``heard``, ``format``), checked by ``agent.requests.parse_request`` as our own requests
are. The thread's history lives on the server, which knows what the user heard of a cut reply; the
messages before the latest are not replayed. ``tools``, ``context`` and ``state`` are accepted and
not used (docs/agui.md, "Input").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ag_ui.core import RunAgentInput, TextPart, UserMessage
from pydantic import ValidationError

from agent.requests import OPTION_FIELDS, BadRequest, TurnRequest, check_fields, parse_request

MAX_RUN_INPUT_BYTES = 1024 * 1024  # a RunAgentInput carries the thread's whole history
SPEECH_PROPS = "speech"  # forwardedProps.speech: how the reply is spoken
AUDIO_FORMAT = "pcm_s16le"  # the one format offered: 24 kHz mono signed 16-bit little-endian PCM
AUDIO_FORMATS = (AUDIO_FORMAT,)
SPEECH_FIELDS = (*OPTION_FIELDS, "heard", "format")
MAX_ERRORS_SHOWN = 3
# threadId and runId are echoed whole in RUN_STARTED and RUN_FINISHED: at this length both fit
# one /ws frame (agent.leg.agui_frames) whatever their characters
MAX_ID_CHARS = 1024


@dataclass(frozen=True, slots=True)
class AguiRun:
    """One AG-UI run: its thread (our conversation), its id, the turn it asks for and the audio
    format it takes."""

    thread_id: str
    run_id: str
    request: TurnRequest
    audio_format: str = AUDIO_FORMAT


def parse_run_input(payload: object) -> RunAgentInput:
    """A decoded body as a ``RunAgentInput``; raises ``BadRequest`` (``invalid_run_input``)."""
    if not isinstance(payload, dict):
        raise BadRequest("invalid_run_input", "a RunAgentInput must be a JSON object")
    try:
        run_input = RunAgentInput.model_validate(payload)
    except ValidationError as exc:
        raise BadRequest("invalid_run_input", f"not a RunAgentInput: {_where(exc)}") from None
    if max(len(run_input.thread_id), len(run_input.run_id)) > MAX_ID_CHARS:
        message = f"threadId and runId must be at most {MAX_ID_CHARS} characters"
        raise BadRequest("invalid_run_input", message)
    return run_input


def _where(exc: ValidationError) -> str:
    """The first few problems, each as ``field.path: message``."""
    problems = [
        f"{'.'.join(map(str, error['loc'])) or 'body'}: {error['msg']}"
        for error in exc.errors(include_url=False)[:MAX_ERRORS_SHOWN]
    ]
    more = exc.error_count() - len(problems)
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")


def run_of(run_input: RunAgentInput) -> AguiRun:
    """The run ``run_input`` asks for; raises ``BadRequest``."""
    if not run_input.thread_id.strip() or not run_input.run_id.strip():
        raise BadRequest("invalid_run_input", "threadId and runId must be non-empty strings")
    speech = dict(_speech_props(run_input.forwarded_props))
    audio_format = speech.pop("format", AUDIO_FORMAT)
    if audio_format not in AUDIO_FORMATS:
        offered = ", ".join(AUDIO_FORMATS)
        message = f"forwardedProps.speech.format {audio_format!r}: offered {offered}"
        raise BadRequest("unsupported_audio_format", message)
    request = parse_request({"prompt": prompt_of(run_input), **speech})
    return AguiRun(run_input.thread_id, run_input.run_id, request, audio_format)


def _speech_props(forwarded: object) -> Mapping[str, object]:
    """``forwardedProps.speech``, its fields checked by name (other props are the app's own)."""
    if not isinstance(forwarded, dict) or forwarded.get(SPEECH_PROPS) is None:
        return {}
    speech = forwarded[SPEECH_PROPS]
    if not isinstance(speech, dict):
        raise BadRequest("invalid_speech", "forwardedProps.speech must be an object")
    try:
        check_fields(speech, SPEECH_FIELDS)
    except BadRequest as exc:
        raise BadRequest("invalid_speech", f"forwardedProps.speech: {exc.message}") from None
    return speech


def prompt_of(run_input: RunAgentInput) -> str:
    """The text of the run's latest message, which must be the user's; raises ``BadRequest``."""
    if not run_input.messages or not isinstance(last := run_input.messages[-1], UserMessage):
        raise BadRequest(
            "no_user_message",
            "the latest message must be the user's (role user): this agent answers it, and "
            "calls no tools of the client's",
        )
    if isinstance(last.content, str):
        return last.content
    texts = [part.text for part in last.content if isinstance(part, TextPart)]
    if not texts:
        raise BadRequest("no_user_message", "the user's latest message has no text part")
    return "\n".join(texts)
