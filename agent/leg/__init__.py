"""The browser leg: ``messages`` (each ``/ws`` client message parsed once, typed),
``voice_input`` (listening, the playback clock and barge-in, sans-I/O), ``playback`` (until
when the page plays), ``socket`` (``VoiceSocket``, the asyncio shell) and ``sse`` (the SSE
response of ``POST /invocations``)."""
