"""On ``PYTHONPATH``: what the GPU machine lacks and the run does not carry cannot be imported.

The G2P stack (spaCy, misaki, eSpeak: the run reads phonemes from a table), the ONNX engine's
packages and PyAV (the speech API's codecs). See scripts/fetch_gpu_wheels.sh.
"""

import sys

ABSENT = ("spacy", "phonemizer", "espeakng_loader", "misaki", "docopt", "av", "onnxruntime")
for name in ABSENT:
    sys.modules[name] = None  # type: ignore[assignment]  # `import name` raises ModuleNotFoundError
