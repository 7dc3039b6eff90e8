"""Synthesis: Kokoro engines behind one interface, and what they share.

The shared machinery: ``base`` (the interface: ``prepare``, then ``synthesize``), ``g2p``
(text to phonemes), ``scheduler`` (every connection's pieces batched onto the engine's lanes),
``voices`` (blends), ``timings`` (word times), ``windows`` (decoding a sentence in windows:
the plan, its settings, when each window is decoded; ``window_plan``), ``packaged`` (the
Kokoro files shipped on PyPI). The engines, each a wing: ``onnx/`` (int8 ONNX on the CPU)
and ``torch/`` (PyTorch, with ``torch/onnx_import/``). Heavy imports (onnxruntime, torch)
happen only for the engine chosen.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tts_server.engines.base import Engine, EngineError, Trim
from tts_server.engines.g2p import BadPhonemeTable, EnglishG2P, G2PUnavailable, PhonemeTable
from tts_server.engines.prepared import Prepared, Refusal, UnknownVoice, UnsupportedText
from tts_server.engines.windows import window_plan
from tts_server.settings import Settings

__all__ = [
    "Engine",
    "EngineError",
    "Prepared",
    "Refusal",
    "Trim",
    "UnknownVoice",
    "UnsupportedText",
    "load_engine",
    "load_g2p",
    "window_plan",
]
log = logging.getLogger("tts_server")


def load_g2p(settings: Settings) -> Callable[[str], str]:
    """English G2P, behind the phoneme table if one is set (then G2P itself is optional)."""
    if settings.phoneme_table is None:
        try:
            return EnglishG2P()
        except G2PUnavailable as exc:
            raise EngineError(str(exc)) from exc
    fallback: Callable[[str], str] | None
    try:
        fallback = EnglishG2P()
    except G2PUnavailable as exc:
        log.warning("G2P unavailable (%s): only the phoneme table's texts can be spoken", exc)
        fallback = None
    try:
        return PhonemeTable.load(settings.phoneme_table, fallback)
    except BadPhonemeTable as exc:
        raise EngineError(str(exc)) from exc


def load_engine(settings: Settings) -> Engine:
    """Build the engine ``settings`` asks for (blocking: loads G2P and weights)."""
    g2p = load_g2p(settings)
    if settings.engine == "torch":
        from tts_server.engines.torch.engine import TorchEngine
        from tts_server.engines.torch.onnx_import.model_dir import default_model_dir

        return TorchEngine(
            g2p,
            model_dir=settings.model_dir or default_model_dir(settings.import_cache),
            device=settings.device,
            max_batch=settings.max_batch,
            batch_wait_ms=settings.batch_wait_ms,
            remove_weight_norm=settings.fold_weight_norm,
            fuse_styles=settings.fuse_styles,
            windows=window_plan(settings),
        )
    from tts_server.engines.onnx.engine import OnnxEngine

    return OnnxEngine(
        g2p,
        model_dir=settings.model_dir,
        workers=settings.onnx_workers,
        lane_threads=settings.onnx_threads,
        windows=window_plan(settings),
        spinning=settings.onnx_spinning,
        narrow=settings.onnx_narrow,
    )
