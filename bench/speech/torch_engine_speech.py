"""Does the PyTorch engine speak? Real Kokoro weights (imported from the embedded ONNX model)
against the ONNX engine, stage by stage, by ear (offline Whisper) and by the clock.

    python -m bench.speech.torch_engine_speech     # writes docs/benchmarks/torch_engine_speech.*

1. Same tokens, style row and speed into the ONNX graph and into ``BatchedKokoro``: frames per
   token (equal, or one frame apart where a token's duration lies near .5: the ONNX graph
   quantizes its activations to int8 on the fly, this model runs them in float32), and the
   audio: SNR after a least-squares gain (the export's iSTFT is 1.5 times louder than
   ``torch.istft``; kokoro draws its harmonic source's noise and phases at random, the export
   does not) and a log-spectral distance in dB.
2. Whisper's WER on a paragraph, each engine.
3. A mixed-length batch of eight sentences (three voices, two speeds) in one forward pass:
   each item's WER beside the same sentence synthesized alone.
4. Word timings of both engines; speed and a blend on both.
5. CPU real-time factor of both engines, same run; the calibrated random checkpoint's cost
   per call beside the real weights'.

By stage: ``torch_stages`` (1, and the model calls the others share), ``torch_rounding`` (why
durations flip: int8 in the weights and the activations), ``torch_engines`` (2 to 5),
``torch_report`` (the Markdown). This module measures them all and writes the files.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from bench.speech.intelligibility import PARAGRAPH
from bench.speech.torch_engines import (
    BATCH,
    batch_and_timings,
    calibrated_cost,
    real_time_factors,
    speed_and_blend,
)
from bench.speech.torch_report import markdown
from bench.speech.torch_rounding import activation_rounding, weight_rounding
from bench.speech.torch_stages import OnnxReference, stage_comparison, token_ids
from tts_server.engines.torch.engine import TorchEngine
from tts_server.engines.torch.onnx_import.model_dir import embedded_model_dir

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"


def measure(runs: int, cache: Path | None = None) -> dict[str, Any]:
    """Everything in the module docstring, on this machine's CPU."""
    from bench.load.calibrated_checkpoint import PHONEME_TABLE
    from tts_server.engines.g2p import EnglishG2P
    from tts_server.engines.onnx.engine import OnnxEngine

    g2p = EnglishG2P()
    started = time.perf_counter()
    model_dir = embedded_model_dir(cache)
    import_s = time.perf_counter() - started
    torch_engine = TorchEngine(g2p, model_dir, device="cpu", max_batch=len(BATCH))
    onnx_engine = OnnxEngine(g2p)
    reference = OnnxReference()
    from tts_server.engines.packaged import packaged_files

    rounding = weight_rounding(packaged_files()[0])
    try:
        stages = [
            {"text": text, "voice": voice, "speed": speed}
            | stage_comparison(reference, torch_engine._batched, g2p(text), voice, speed)
            for text, voice, speed in BATCH[1::2]
        ]
        rounding_in_bert = activation_rounding(
            torch_engine._batched, token_ids(g2p(BATCH[1][0]), reference.vocab)
        )
        rtf = asyncio.run(
            real_time_factors({"onnx": onnx_engine, "torch": torch_engine}, PARAGRAPH, runs)
        )
        batch, batch_time = batch_and_timings(torch_engine, onnx_engine, g2p)
        speeds = speed_and_blend(torch_engine, onnx_engine, reference, g2p(BATCH[3][0]))
        table = json.loads(PHONEME_TABLE.read_text(encoding="utf-8"))
        cost = calibrated_cost(torch_engine._batched, table, runs, cache)
    finally:
        torch_engine.close()
        onnx_engine.close()
    return {
        "machine": {
            "cpu": platform.machine(),
            "cores": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        },
        "import_s": round(import_s, 1),
        "weight_rounding": rounding,
        "stages": stages,
        "activation_rounding": rounding_in_bert,
        "paragraph": {"text": PARAGRAPH, **rtf},
        "batch": batch,
        "batch_time": batch_time,
        "speed_and_blend": speeds,
        "calibrated_checkpoint": cost,
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Measure, write ``docs/benchmarks/torch_engine_speech.{json,md}``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1, help="timed rounds (medians)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--import-cache", type=Path, help="where the imported weights are kept")
    args = parser.parse_args(argv)
    result = measure(args.runs, args.import_cache)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "torch_engine_speech.json").write_text(
        json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (args.out / "torch_engine_speech.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
