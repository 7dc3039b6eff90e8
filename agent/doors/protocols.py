"""Which protocol a front door speaks on its routes: ours (``http``, the default) or AG-UI
(``agui``).

AgentCore Runtime serves both on the same port and paths (8080, ``POST /invocations``, ``/ws``)
and tells them apart only by the runtime's configured protocol (``HTTP`` or ``AGUI``), so the
container chooses by a setting: ``VOICE_AGENT_PROTOCOL`` in the image and on the runtime,
``voice-agent dev --protocol`` locally (docs/agui.md). Light: the CLI reads it to build its parser.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, cast

Protocol = Literal["http", "agui"]
PROTOCOLS: tuple[Protocol, ...] = ("http", "agui")
PROTOCOL_VARIABLE = "VOICE_AGENT_PROTOCOL"
SERVER_PROTOCOL: dict[Protocol, str] = {"http": "HTTP", "agui": "AGUI"}  # AgentCore's names


class ProtocolSettingError(ValueError):
    """A protocol setting names no protocol; its message names the setting and the choices.

    Both doors' ``create_app`` raise it before building anything (the AgentCore app's start
    fails with it), and ``voice-agent dev`` says it in one line and exits 2."""


def check_protocol(text: str, name: str = PROTOCOL_VARIABLE) -> Protocol:
    """``text`` as a protocol (any case); raises ``ProtocolSettingError`` naming ``name``."""
    value = text.strip().lower()
    if value not in PROTOCOLS:
        raise ProtocolSettingError(f"{name} must be one of {', '.join(PROTOCOLS)}, not {text!r}")
    return cast(Protocol, value)


def protocol_from_env(env: Mapping[str, str] | None = None) -> Protocol:
    """``VOICE_AGENT_PROTOCOL`` (unset or empty: ``http``); raises ``ProtocolSettingError``."""
    raw = (os.environ if env is None else env).get(PROTOCOL_VARIABLE, "")
    return check_protocol(raw) if raw.strip() else "http"
