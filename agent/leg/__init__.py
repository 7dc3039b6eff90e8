"""The browser leg: ``messages`` (each ``/ws`` client message parsed once, typed),
``voice_input`` (listening, the playback clock and barge-in, sans-I/O), ``playback`` (until
when the page plays), ``socket`` (``VoiceSocket``, the asyncio shell) and ``sse`` (the SSE
response of ``POST /invocations``); AG-UI (docs/agui.md): ``agui_input`` (a ``RunAgentInput``
read once), ``agui`` (a turn's events as AG-UI's, sans-I/O) and ``agui_socket`` (its ``/ws``)."""
