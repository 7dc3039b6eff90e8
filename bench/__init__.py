"""Benchmarks: what the stack measures, grouped by what is measured.

Nothing in ``agent``, ``tts_client``, ``tts_server`` or ``tts_protocol`` imports this package;
``voice-agent bench`` imports its module only when it runs. The tools that are not
benchmarks (the dependency audit, mutation testing) are ``devtools``. Every benchmark writes
its figures to ``docs/benchmarks/`` (``docs/benchmarks/README.md`` lists them).

- ``bench.latency``: how soon speech comes: the whole pipeline (``voice-agent bench``), voice to
  voice over ``/ws``, the TTS transport, engine and segmenter alone, long text's first audio;
- ``bench.load``: the TTS server under concurrent sessions, capacity as users meet it, and the
  GPU run with its calibrated checkpoint and phoneme table;
- ``bench.reliability``: a soak of many turns and a fault matrix between the agent and TTS;
- ``bench.speech``: whether the speech is right: intelligibility (Whisper WER), text
  normalization, the torch engine against the ONNX one.
"""
