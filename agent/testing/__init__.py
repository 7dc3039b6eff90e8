"""Test and benchmark helpers: a scripted strands model that calls tools (``tool_model``).
Shipped, as ``tts_server.testing`` is, so that the tool-turn benchmark needs no ``tests/``; no
turn imports it (it imports strands)."""
