"""Tooling around the runtime packages: benchmarks and the dependency audit.

Nothing in ``agent``, ``tts_client``, ``tts_server`` or ``tts_protocol`` imports this package;
``voice-agent bench`` and ``voice-agent audit`` import their module only when they run.

- ``bench.agent_latency``: ``voice-agent bench``, the whole pipeline's latency, built from
  ``latency_plan`` (what runs), ``latency_targets`` (where a turn runs), ``latency_levels``
  (measuring each level), ``latency_stats`` (a turn's figures) and ``latency_report`` (output);
- ``bench.audit``: ``voice-agent audit``, dependency floors, vulnerability scan and SBOMs;
- ``python -m bench.tts_transport_bench``, ``python -m bench.tts_engine_bench``,
  ``python -m bench.segmenter_bench``: the TTS transport, engine and segmenter alone.
- ``python -m bench.tts_load_bench``: the TTS server under N concurrent sessions (``load_stats``,
  ``load_report``, ``load_server``); ``bench.gpu_run`` (``scripts/gpu_load_run.sh``) runs it on a
  GPU machine with a calibrated checkpoint.
"""
