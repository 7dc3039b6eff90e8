"""What ``voice-agent``'s stop lines say, for the entry point (a stop while it still loads)
and the command line alike: each command's name, and what a stop leaves as it was (``KEPT``).
Light on purpose: the entry point imports it before anything heavy."""

from __future__ import annotations

from collections.abc import Sequence

KEPT = {
    "dev": "nothing was lost: the agent keeps nothing on disk",
    "bench": "no report was written: docs/benchmarks/ keep the last one",
    "acceptance": "no verdict; nothing was written, the endpoint was only asked to speak",
    "audit": "files it had already written stay as they are; run it again for a whole audit",
    "chat": "nothing was lost: the conversation lives on in the agent",
    "deploy": "the AWS calls already made stand; nothing else was changed",
}

# What a stop leaves where it cut requests still running short (the dev server's): not "nothing
# was lost", which a cut reply's client would read as a lie
CUT = {
    "dev": "the agent keeps nothing on disk; the replies cut short ended unfinished, and their "
    "clients may ask again",
}


def chosen(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is no flag."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def command_name(command: str | None) -> str:
    """``voice-agent <command>`` for a command of ``KEPT``, else ``voice-agent``."""
    return f"voice-agent {command}" if command in KEPT else "voice-agent"
