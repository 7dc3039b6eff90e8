"""The voice agent, in wings above a ground floor (docs/architecture.md).

The ground floor, which imports no wing: ``requests`` (what a client asks for), ``events``
(what it is sent), ``config`` (settings, each declared once), ``browser_leg`` (the leg's
constants). The wings: ``core`` (the turn, its memory, conversations, the ``VoiceAgent``),
``leg`` (the browser leg: ``/ws`` messages, voice input, the socket, SSE), ``listening``
(VAD, endpointer, recognizer), ``segmenter`` (LLM text to sentences) and ``doors`` (the
AgentCore app and the dev server on one ``FrontDoor``); ``web/`` holds the browser chat.
"""
