"""The PyTorch engine on real Kokoro weights, imported once from the embedded ONNX model; and
the windows' trace, on for a test (``trace``).

The import (10-30 s) is cached on disk keyed by the ONNX model's SHA-256 and the importer's
own digest (``model_dir.cache_key``: an edited importer imports again, never reads what an
earlier one wrote), in ``$TTS_TEST_IMPORT_CACHE`` or a folder of the system's temporary
directory, so that later test sessions reuse it; the engine (about 10 s to load) is shared by
the session.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tts_server.engines import load_engine
from tts_server.engines.torch.engine import TorchEngine
from tts_server.engines.torch.onnx_import.model_dir import embedded_model_dir
from tts_server.engines.window_trace import TRACE, trace_to
from tts_server.settings import SAGEMAKER_MODEL_DIR, Settings

IMPORT_CACHE = Path(
    os.environ.get("TTS_TEST_IMPORT_CACHE")
    or Path(tempfile.gettempdir()) / "kokoro-voice-agent-tests" / "torch-import"
)


@pytest.fixture(scope="session")
def imported_model_dir() -> Path:
    """The model directory imported from the embedded ONNX model (cached across sessions)."""
    return embedded_model_dir(IMPORT_CACHE)


@pytest.fixture(scope="session")
def real_torch_engine(imported_model_dir: Path) -> Iterator[TorchEngine]:
    """``--engine torch`` as the CLI builds it with no model directory: the imported weights.

    Batches of up to 8 pieces, on the CPU.
    """
    if SAGEMAKER_MODEL_DIR.exists():
        pytest.skip(f"{SAGEMAKER_MODEL_DIR} exists: the default would load it instead")
    settings = Settings(engine="torch", device="cpu", max_batch=8, import_cache=IMPORT_CACHE)
    engine = load_engine(settings)
    assert isinstance(engine, TorchEngine)
    yield engine
    engine.close()


@pytest.fixture
def trace(tmp_path: Path) -> Iterator[Path]:
    """The windows' trace on (``--window-trace``), to a file; off again after the test."""
    path = tmp_path / "windows.jsonl"
    handler = trace_to(path)
    yield path
    TRACE.removeHandler(handler)
    handler.close()
    TRACE.setLevel(logging.NOTSET)
    TRACE.propagate = True
