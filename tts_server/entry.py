"""``tts-server``'s entry point (and ``python -m tts_server``'s): Ctrl+C and SIGTERM are caught
before the server's imports (uvicorn, FastAPI, the engine's), so a stop while they load is one
line and the end by the signal too; none with ``--no-banner`` (``voice-agent dev``'s child,
whose parent says the line). docs/operations.md, "Stopping".
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from observability.stopping import STARTING, Stopped, catch_stops, end_stopped, stop_line


def quiet(argv: Sequence[str]) -> bool:
    """Whether ``argv`` turns the banner off: ``--no-banner`` the last of it and ``--banner``."""
    said = [arg for arg in argv if arg in ("--banner", "--no-banner")]
    return bool(said) and said[-1] == "--no-banner"


def main() -> None:
    """Catch stops, import the server's command line, run it."""
    catch_stops()
    try:
        from tts_server import cli
    except Stopped as stopped:
        line = "" if quiet(sys.argv[1:]) else stop_line("tts-server", stopped, STARTING)
        end_stopped(line, stopped.signum)
    cli.main()
