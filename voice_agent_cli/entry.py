"""``voice-agent``'s entry point (and ``python -m voice_agent_cli``'s): Ctrl+C and SIGTERM are
caught before the command line's imports, which take a second or so, so a stop while they load
is one line and the end by the signal too (docs/operations.md, "Stopping").

``KEPT`` is the end of each command's stop line: what a stop leaves as it was.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from observability.stopping import Stopped, catch_stops, end_stopped, stop_line

KEPT = {
    "dev": "nothing was lost: the agent keeps nothing on disk",
    "bench": "no report was written: docs/benchmarks/ keep the last one",
    "acceptance": "no verdict; nothing was written, the endpoint was only asked to speak",
    "audit": "files it had already written stay as they are; run it again for a whole audit",
    "chat": "nothing was lost: the conversation lives on in the agent",
    "deploy": "the AWS calls already made stand; nothing else was changed",
}
STARTING = "it was still starting; nothing was lost"


def chosen(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is no flag."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def command_name(command: str | None) -> str:
    """``voice-agent <command>`` for a command of ``KEPT``, else ``voice-agent``."""
    return f"voice-agent {command}" if command in KEPT else "voice-agent"


def main() -> None:
    """Catch stops, import the command line, run it."""
    catch_stops()
    try:
        from voice_agent_cli import cli
    except Stopped as stopped:
        name = command_name(chosen(sys.argv[1:]))
        end_stopped(stop_line(name, stopped, STARTING), stopped.signum)
    cli.main()
