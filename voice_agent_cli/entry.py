"""``voice-agent``'s entry point (and ``python -m voice_agent_cli``'s): Ctrl+C and SIGTERM are
caught before the command line's imports, which take a second or so, so a stop while they load
is one line and the end by the signal too (docs/operations.md, "Stopping").
"""

from __future__ import annotations

import sys

from observability.stopping import STARTING, as_stop, catch_stops, end_stopped, stop_line
from voice_agent_cli.stop_lines import chosen, command_name


def main() -> None:
    """Catch stops, import the command line, run it."""
    catch_stops()
    try:
        from voice_agent_cli import cli
    except BaseException as error:  # a stop, or an import's error it caused (``as_stop``)
        if (stopped := as_stop(error)) is None:
            raise
        name = command_name(chosen(sys.argv[1:]))
        end_stopped(stop_line(name, stopped, STARTING), stopped.signum)
    cli.main()
