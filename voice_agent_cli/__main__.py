"""``python -m voice_agent_cli``: the ``voice-agent`` command."""

from voice_agent_cli.entry import main

main()
