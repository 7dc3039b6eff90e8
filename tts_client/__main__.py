"""``python -m tts_client``: see ``tts_client.cli``."""

from tts_client.cli import main

raise SystemExit(main())
