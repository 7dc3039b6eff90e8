"""Load benchmarks: the TTS server under many sessions, and capacity as users meet it.

- ``tts_load_bench``: ``python -m bench.load.tts_load_bench``, N concurrent sessions each
  speaking four sentences pipelined, unbatched and batched; built from ``stats`` (one level's
  figures), ``report`` (JSON, Markdown, PNG) and ``server`` (the ``tts-server`` child);
- ``capacity``: ``python -m bench.load.capacity``, many conversations in front of a small TTS
  server (fake engine): who holds capacity;
- ``gpu_run``: ``scripts/gpu_load_run.sh`` (or ``python -m bench.load.gpu_run``), the prepared
  GPU run: a calibrated checkpoint, then ``tts_load_bench`` batched and unbatched;
- ``calibrated_checkpoint``: ``python -m bench.load.calibrated_checkpoint --out DIR``, a
  full-size Kokoro-82M with random weights calibrated for speed measurements;
- ``phoneme_table``: ``python -m bench.load.phoneme_table --out bench/load/phonemes.json``, the
  load sentences' phonemes from the real G2P (``phonemes.json``, the committed table, lets a
  GPU machine run without spaCy or eSpeak).
"""
