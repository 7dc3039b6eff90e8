"""``tts-server``'s entry point (and ``python -m tts_server``'s): Ctrl+C and SIGTERM are caught
before the server's imports (uvicorn, FastAPI, the engine's), so a stop while they load is one
line and the end by the signal too; none with the banner off (``--no-banner`` or
``TTS_BANNER=0``: ``voice-agent dev``'s child, whose parent says the line). docs/operations.md,
"Stopping".
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from observability.stopping import STARTING, as_stop, catch_stops, end_stopped, stop_line
from tts_server.settings import from_env  # a leaf: the standard library and tts_protocol


def quiet(argv: Sequence[str], env: Mapping[str, str] | None = None) -> bool:
    """Whether the banner is off, as the settings will read it: the last of ``--banner`` and
    ``--no-banner`` in ``argv`` (spelled in full: the settings' parser takes no abbreviation),
    else ``TTS_BANNER`` (a value it refuses: not quiet, the settings say why once parsed)."""
    said = [arg for arg in argv if arg in ("--banner", "--no-banner")]
    if said:
        return said[-1] == "--no-banner"
    try:
        return not from_env("banner", env)
    except SystemExit:
        return False


def main() -> None:
    """Catch stops, import the server's command line, run it."""
    catch_stops()
    try:
        from tts_server import cli
    except BaseException as error:  # a stop, or an import's error it caused (``as_stop``)
        if (stopped := as_stop(error)) is None:
            raise
        line = "" if quiet(sys.argv[1:]) else stop_line("tts-server", stopped, STARTING)
        end_stopped(line, stopped.signum)
    cli.main()
