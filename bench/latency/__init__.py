"""Latency benchmarks: how soon text and speech come, from the whole pipeline to one engine.

Entry points (each writes ``docs/benchmarks/<name>.*``):

- ``agent_latency``: ``voice-agent bench`` (or ``python -m bench.latency.agent_latency``), the
  whole pipeline's latency: first audio vs. completion, stream vs. batch, overhead over the
  floor, the browser leg, concurrency. Built from
  ``plan`` (what runs), ``targets`` (where a turn runs), ``levels`` (measuring each level),
  ``stats`` (a turn's figures) and ``report`` (JSON, Markdown, plot);
- ``voice_to_voice``: ``python -m bench.latency.voice_to_voice``, TTS-made utterances played
  into ``/ws`` as a microphone would; ``voice_to_voice_report`` writes its output;
- ``tts_transport_bench``: ``python -m bench.latency.tts_transport_bench``, the TTS client
  alone: pipelined vs. one at a time vs. a new connection each;
- ``tts_engine_bench``: ``python -m bench.latency.tts_engine_bench``, the engine alone: time to
  first audio and real-time factor, alone and under concurrent load;
- ``tool_turn``: ``python -m bench.latency.tool_turn``, spoken turns whose reply calls a tool:
  first audio, the tool's time and the silence the user hears around it, the filler off and
  on; ``tool_turn_report`` writes its output;
- ``long_text_first_audio``: ``python -m bench.latency.long_text_first_audio``, first audio for
  long unpunctuated text against a normal sentence;
- ``segmenter_bench``: ``python -m bench.latency.segmenter_bench``, the sentence segmenter's
  cost per token and how soon it releases boundaries;
- ``before_after``: ``python -m bench.latency.before_after BEFORE AFTER``, two runs of the
  above side by side (a refactor's before and after), medians and their change.
"""
