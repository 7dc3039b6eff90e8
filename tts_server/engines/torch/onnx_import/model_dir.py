"""The PyTorch engine's model directory, made once from the embedded int8 ONNX model.

Where no real ``kokoro-v1_0.pth`` is at hand (no ``--model-dir``, nothing at ``/opt/ml/model``),
``--engine torch`` speaks with the weights of the model the CPU engine runs: ``state_dicts``
reads them back (dequantized to float32), and ``import_model_dir`` writes the engine's layout:
``config.json`` (the published Kokoro-82M config with the ONNX model's vocabulary), one
``kokoro.pth`` and ``voices/<name>.pt`` from the embedded voice packs. The result is cached under
``<cache>/<cache_key>`` (``--import-cache``, default ``cache_root()``): the ONNX model's SHA-256
and a digest of everything else that made it (this package's source, the packaged config, the
vocabulary and voice packs), so a changed importer imports again instead of reading what an
earlier one wrote. It is written to a temporary folder and then renamed into place, so the
import (10-30 s) happens once per ONNX model, importer and machine.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import io
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tts_server.engines.base import EngineError
from tts_server.engines.packaged import packaged_files
from tts_server.engines.torch.kmodel import PARTS, REPO_ID, import_kmodel
from tts_server.engines.torch.onnx_import.state_dicts import convert, parameter_shapes
from tts_server.settings import SAGEMAKER_MODEL_DIR

log = logging.getLogger("tts_server")
CHECKPOINT = "kokoro.pth"
CONFIG_PACKAGE = "tts_server.engines.torch"  # where kokoro82m_config.json is packaged
CONFIG_NAME = "kokoro82m_config.json"
IMPORTER = Path(__file__).parent  # the importer's source: its every *.py is in the cache key
_CHUNK = 1 << 20


def cache_root() -> Path:
    """``$XDG_CACHE_HOME`` (else ``~/.cache``)``/kokoro-voice-agent/torch-import``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kokoro-voice-agent" / "torch-import"


def sha256(path: Path) -> str:
    """The file's SHA-256, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def cache_key(model: Path, vocab: dict[str, int], voices: dict[str, np.ndarray]) -> str:
    """The import's folder name: ``<sha256 of the ONNX model>-<producer>``, where the producer
    digest covers the importer's source files, the packaged config, ``vocab`` and ``voices``."""
    config = (importlib.resources.files(CONFIG_PACKAGE) / CONFIG_NAME).read_bytes()
    parts = [(path.name, path.read_bytes()) for path in sorted(IMPORTER.glob("*.py"))]
    parts += [(CONFIG_NAME, config), ("vocab", json.dumps(vocab, sort_keys=True).encode())]
    for name in sorted(voices):
        pack = np.ascontiguousarray(voices[name], dtype=np.float32)
        parts.append((f"voice {name} {pack.shape}", pack.tobytes()))
    digest = hashlib.sha256()
    for name, data in parts:
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return f"{sha256(model)}-{digest.hexdigest()[:16]}"


def published_config(vocab: dict[str, int]) -> dict[str, Any]:
    """Kokoro-82M's published ``config.json`` with ``vocab`` (the ONNX model's)."""
    text = (importlib.resources.files(CONFIG_PACKAGE) / CONFIG_NAME).read_text("utf-8")
    return {**json.loads(text), "vocab": vocab}


def _kmodel_shapes(config: dict[str, Any]) -> dict[str, dict[str, tuple[int, ...]]]:
    """The parameter shapes of a ``KModel`` built from ``config`` (random init, nothing read)."""
    import torch

    empty = io.BytesIO()
    torch.save({}, empty)
    empty.seek(0)
    return parameter_shapes(import_kmodel()(repo_id=REPO_ID, config=config, model=empty))


def import_model_dir(
    model: Path, vocab: dict[str, int], voices: dict[str, np.ndarray], out: Path
) -> Path:
    """Write the torch engine's model directory ``out`` from the ONNX model ``model``."""
    import torch

    config = published_config(vocab)
    state = convert(model, _kmodel_shapes(config))
    (out / "voices").mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    checkpoint = {
        part: {key: torch.from_numpy(np.ascontiguousarray(v)) for key, v in state[part].items()}
        for part in PARTS
    }
    torch.save(checkpoint, out / CHECKPOINT)
    for name, pack in voices.items():
        table = torch.from_numpy(np.ascontiguousarray(pack, dtype=np.float32))
        torch.save(table, out / "voices" / f"{name}.pt")
    return out


def default_model_dir(cache: Path | None = None) -> Path:
    """Where ``--engine torch`` finds its model without ``--model-dir``: SageMaker's
    ``/opt/ml/model`` if it exists, else the import of the embedded model (cached in ``cache``).
    """
    if SAGEMAKER_MODEL_DIR.is_dir():
        return SAGEMAKER_MODEL_DIR
    return embedded_model_dir(cache)


def embedded_model_dir(cache: Path | None = None) -> Path:
    """The model directory imported from the embedded ONNX model, imported now if not cached.

    ``EngineError`` if the embedded model is missing or does not import (listing what it
    could not fill).
    """
    model, vocab, voices = packaged_files()
    target = (cache or cache_root()) / cache_key(model, vocab, voices)
    if (target / CHECKPOINT).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    log.info("importing Kokoro weights from %s into %s (once)", model, target)
    staging = Path(tempfile.mkdtemp(prefix=".import-", dir=target.parent))
    try:
        import_model_dir(model, vocab, voices, staging)
        try:
            staging.rename(target)
        except OSError:  # another process finished the same import first
            if not (target / CHECKPOINT).is_file():
                raise
    except OSError as exc:
        raise EngineError(f"cannot write the imported model to {target}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("imported in %.1f s", time.perf_counter() - started)
    return target
