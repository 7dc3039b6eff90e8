"""Stages 2 to 5 of ``torch_engine_speech``: both engines whole, by ear (offline Whisper) and
by the clock: the paragraph's WER and real-time factor, the mixed batch of eight item by item,
word timings, speed and blends, the calibrated random checkpoint's cost beside the real weights'.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench.speech.torch_stages import OnnxReference, style_row, token_ids
from tts_protocol.validation import parse_voice
from tts_server.engines.base import Engine
from tts_server.engines.g2p import Phonemized, phonemize
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed
from tts_server.engines.torch.engine import TorchEngine
from tts_server.engines.torch.kokoro_batch import BatchedKokoro
from tts_server.engines.torch.onnx_import.model_dir import embedded_model_dir

SAMPLES_PER_FRAME = 600
BATCH = (  # (text, voice, speed): mixed lengths, three voices, two speeds
    ("Good morning.", "jf_alpha", 1.0),
    ("The train leaves from the old station after lunch.", "jm_kumo", 1.0),
    ("Please close the window.", "jf_nezumi", 1.2),
    ("My brother bought a new bicycle last weekend, and he rides it to work.", "jf_alpha", 1.2),
    ("Thank you very much.", "jm_kumo", 1.2),
    ("The weather will be sunny with a light wind from the west.", "jf_nezumi", 1.0),
    ("Where is the nearest station?", "jf_alpha", 1.0),
    ("We planted tomatoes, beans and carrots in the garden this spring.", "jm_kumo", 1.2),
)


def wer_of(audio: np.ndarray, reference_text: str) -> tuple[float, str]:
    """Whisper's WER of ``audio`` against ``reference_text``, and what it heard."""
    from bench.speech.intelligibility import transcribe, word_error_rate

    heard = transcribe(audio, 24_000)
    return word_error_rate(reference_text, heard), heard


async def spoken(engine: Engine, text: str, voice: str, speed: float = 1.0) -> dict[str, Any]:
    """The engine's whole synthesis of ``text``: the audio and the seconds it took."""
    started = time.perf_counter()
    prepared = engine.prepare(text, parse_voice(voice), speed)
    chunks = [chunk.audio async for chunk in engine.synthesize(prepared)]
    audio = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    return {"audio": audio, "seconds": time.perf_counter() - started}


def _word_edges(phonemized: Phonemized, timed: Timed) -> list[int]:
    """Each word's first and end sample in the piece's (untrimmed) audio."""
    bounds = timed.bounds if timed.bounds is not None else np.zeros(0, np.int64)
    return [int(bounds[edge]) for word in phonemized.words for edge in (word.start, word.end)]


def batch_and_timings(
    torch_engine: TorchEngine, onnx_engine: Engine, g2p: Any
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The eight sentences alone on both engines and in one torch batch: WER, word edges."""
    phonemized = [phonemize(g2p, text) for text, _, _ in BATCH]
    pieces = [
        Piece(p.phonemes, parse_voice(voice), speed)
        for p, (_, voice, speed) in zip(phonemized, BATCH, strict=True)
    ]
    started = time.perf_counter()
    alone = [torch_engine._infer_batch(0, [piece])[0] for piece in pieces]
    alone_s = time.perf_counter() - started
    started = time.perf_counter()
    batched = torch_engine._infer_batch(0, pieces)
    batch_s = time.perf_counter() - started
    rows = []
    for (text, voice, speed), words, single, together, piece in zip(
        BATCH, phonemized, alone, batched, pieces, strict=True
    ):
        (theirs,) = onnx_engine._infer_batch(0, [piece])
        edges = np.abs(np.subtract(_word_edges(words, single), _word_edges(words, theirs)))
        wer_alone, _ = wer_of(single.audio, text)
        wer_batched, heard_batched = wer_of(together.audio, text)
        wer_onnx, _ = wer_of(theirs.audio, text)
        rows.append(
            {
                "text": text,
                "voice": voice,
                "speed": speed,
                "wer_onnx": round(wer_onnx, 3),
                "wer_torch_alone": round(wer_alone, 3),
                "wer_torch_in_batch": round(wer_batched, 3),
                "heard_in_batch": heard_batched,
                "same_durations_in_batch": bool(
                    single.bounds is not None
                    and together.bounds is not None
                    and np.array_equal(single.bounds, together.bounds)
                ),
                "max_word_edge_difference_frames": round(float(edges.max()) / SAMPLES_PER_FRAME, 2),
            }
        )
    return rows, {"alone_s": round(alone_s, 2), "batch_of_8_s": round(batch_s, 2)}


def speed_and_blend(
    torch_engine: TorchEngine, onnx_engine: Engine, reference: OnnxReference, phonemes: str
) -> list[dict[str, Any]]:
    """Total frames at two speeds, one voice and one blend, on both models."""
    ids = token_ids(phonemes, reference.vocab)
    rows = []
    for voice in ("jf_alpha", "jf_alpha(0.7)+jm_kumo(0.3)"):
        style = style_row(onnx_engine.style_table(parse_voice(voice)), ids)
        for speed in (1.0, 1.5):
            theirs = reference(ids, style, speed).durations
            (ours,) = torch_engine._batched.durations([ids], torch.from_numpy(style[None]), [speed])
            rows.append(
                {
                    "voice": voice,
                    "speed": speed,
                    "frames_onnx": int(sum(theirs)),
                    "frames_torch": int(sum(ours)),
                    "max_token_frame_difference": int(np.abs(np.subtract(ours, theirs)).max()),
                }
            )
    return rows


async def real_time_factors(engines: dict[str, Engine], text: str, runs: int) -> dict[str, Any]:
    """Each engine's synthesis of ``text`` (the paragraph), interleaved ``runs`` times: median
    seconds per audio second, and Whisper's WER of every run (torch draws new noise each
    time: its median is the figure) with what it heard the last time."""
    seconds: dict[str, list[float]] = {name: [] for name in engines}
    wers: dict[str, list[float]] = {name: [] for name in engines}
    result: dict[str, Any] = {}
    for _ in range(runs):
        for name, engine in engines.items():
            said = await spoken(engine, text, "jf_alpha")
            seconds[name].append(said["seconds"] / (said["audio"].size / 24_000))
            wer, heard = wer_of(said["audio"], text)
            wers[name].append(round(wer, 3))
            result[name] = {"heard": heard}
    for name in engines:
        result[name]["rtf"] = round(statistics.median(seconds[name]), 3)
        result[name]["wer"] = round(statistics.median(wers[name]), 3)
        result[name]["wers"] = wers[name]
    return result


def calibrated_cost(
    real: BatchedKokoro, table: dict[str, str], runs: int, cache: Path | None
) -> dict[str, Any]:
    """The calibrated random checkpoint, built on the real weights' targets, beside the real
    weights: one forward pass per sentence, median seconds, same sentences and style rows."""
    from bench.load.calibrated_checkpoint import CONFIG, Calibration, build, real_weight_targets

    frames_per_token, rms = real_weight_targets(table, cache)
    config = json.loads(CONFIG.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as folder:
        report = build(
            Path(folder), config=config, table=table, frames_per_token=frames_per_token, rms=rms
        )
        calibrated = TorchEngine(lambda text: text, Path(folder), device="cpu")
    voice = torch.load(embedded_model_dir() / "voices" / "jf_alpha.pt", weights_only=True)
    models = {"real": real, "calibrated": calibrated._batched}
    first = parse_voice(calibrated.voices[0])
    tables = {"real": voice, "calibrated": calibrated.style_table(first).cpu()}
    timings: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(runs):
        for name, batched in models.items():
            check = Calibration(batched.model, table, tables[name])
            for ids, style in zip(check.token_ids, check.styles, strict=True):
                started = time.perf_counter()
                batched([ids], style[None], [1.0])
                timings[name].append(time.perf_counter() - started)
    calibrated.close()
    real_s, calibrated_s = (statistics.median(timings[name]) for name in models)
    return {
        "targets_from_real_weights": {
            "frames_per_token": round(frames_per_token, 3),
            "rms": round(rms, 4),
        },
        "calibration": report,
        "median_call_s": {"real": round(real_s, 3), "calibrated": round(calibrated_s, 3)},
        "calibrated_over_real": round(calibrated_s / real_s, 3),
    }
