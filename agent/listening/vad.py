"""Voice activity: Silero VAD v6, the ONNX model that ships inside the ``faster-whisper`` wheel.

``VoiceActivity`` cuts a stream of 16 kHz s16le PCM, in frames of any even size, into Silero's
512-sample windows and gives each its speech probability. The ONNX Runtime session is one per
process (its ``run`` is thread-safe); each socket keeps only the model's recurrent state and the
last 64 samples, which Silero reads as the next window's context. About 0.2 ms of CPU per
32 ms window on this project's 2-core machine (docs/listening.md,
docs/benchmarks/voice_to_voice.md).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from agent.listening.settings import WINDOW_BYTES, WINDOW_SAMPLES
from tts_protocol import pcm16_to_float

if TYPE_CHECKING:
    import onnxruntime

CONTEXT_SAMPLES = 64  # Silero v5/v6 at 16 kHz: each window is read after the 64 samples before it
STATE_SHAPE = (1, 1, 128)


def model_path() -> Path:
    """Silero VAD v6 as faster-whisper packages it (the `listen` extra)."""
    import faster_whisper

    return Path(faster_whisper.__file__).parent / "assets" / "silero_vad_v6.onnx"


@cache
def shared_session() -> onnxruntime.InferenceSession:
    """The process's one Silero session: a single thread, no arena (a window is 2 KiB)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = False
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(
        str(model_path()), sess_options=options, providers=["CPUExecutionProvider"]
    )


class VoiceActivity:
    """Speech probabilities of a PCM stream, one per 32 ms window."""

    def __init__(self) -> None:
        self._session = shared_session()
        self.reset()

    def windows(self, pcm: bytes) -> list[tuple[bytes, float]]:
        """The whole windows ``pcm`` completes, each with its speech probability in [0, 1]."""
        data = self._rest + pcm
        whole = len(data) - len(data) % WINDOW_BYTES
        self._rest = data[whole:]
        if not whole:
            return []
        samples = pcm16_to_float(data[:whole])
        count = whole // WINDOW_BYTES
        windows = samples.reshape(count, WINDOW_SAMPLES)
        # Each row is a window after its context; the model runs the rows in order, as time.
        contexts = np.vstack([self._context, windows[:-1, -CONTEXT_SAMPLES:]])
        probabilities, self._h, self._c = self._session.run(
            None, {"input": np.hstack([contexts, windows]), "h": self._h, "c": self._c}
        )
        self._context = windows[-1:, -CONTEXT_SAMPLES:]
        return [
            (data[index * WINDOW_BYTES : (index + 1) * WINDOW_BYTES], float(probability))
            for index, probability in enumerate(probabilities.ravel())
        ]

    def reset(self) -> None:
        """Forget the model's state and any partial window (a new stream starts)."""
        self._h = np.zeros(STATE_SHAPE, dtype=np.float32)
        self._c = np.zeros(STATE_SHAPE, dtype=np.float32)
        self._context = np.zeros((1, CONTEXT_SAMPLES), dtype=np.float32)
        self._rest = b""
