"""``python -m tts_server``: same as ``tts-server``."""

from tts_server.entry import main

main()
