"""Kokoro engines behind one interface; heavy imports happen only for the engine chosen."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tts_server.engines.base import Engine, EngineError, Trim, UnknownVoice
from tts_server.g2p import EnglishG2P, G2PUnavailable

if TYPE_CHECKING:
    from tts_server.settings import Settings

__all__ = ["Engine", "EngineError", "Trim", "UnknownVoice", "load_engine"]


def load_engine(settings: Settings) -> Engine:
    """Build the engine ``settings`` asks for (blocking: loads G2P and weights)."""
    try:
        g2p = EnglishG2P()
    except G2PUnavailable as exc:
        raise EngineError(str(exc)) from exc
    if settings.engine == "torch":
        from tts_server.engines.torch_engine import TorchEngine
        from tts_server.settings import SAGEMAKER_MODEL_DIR

        model_dir = settings.model_dir or SAGEMAKER_MODEL_DIR
        return TorchEngine(g2p, model_dir=Path(model_dir), device=settings.device)
    from tts_server.engines.onnx_engine import OnnxEngine

    return OnnxEngine(g2p, model_dir=settings.model_dir)
