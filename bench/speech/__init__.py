"""Speech benchmarks: is the speech right, by ear (offline Whisper) and against a reference.

- ``intelligibility``: Whisper tiny.en transcription and word error rate (a library, used by
  the other two and by the listening tests);
- ``normalization``: ``python -m bench.speech.normalization``, text normalization's cost per
  sentence and what it buys in intelligibility;
- ``torch_engine_speech``: ``python -m bench.speech.torch_engine_speech``, the torch engine on
  real weights against the ONNX engine, stage by stage, by ear and by the clock; its stages are
  ``torch_stages`` (the two models on the same input, stage by stage), ``torch_rounding`` (why
  durations flip: int8 in the weights and activations), ``torch_engines`` (both engines whole:
  WER, real-time factor, the batch, speed and blends, the calibrated checkpoint's cost) and
  ``torch_report`` (the Markdown).
"""
