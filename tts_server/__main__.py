"""``python -m tts_server``: same as ``tts-server``."""

from tts_server.cli import main

main()
