"""``voice-agent``: the project's command line, outside the runtime packages (``cli.py``)."""
