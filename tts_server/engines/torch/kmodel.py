"""kokoro's ``KModel``: its import (also where kokoro's G2P pipeline cannot be imported), the
parts of its checkpoint and the Hugging Face repository it names.

``import kokoro`` runs its ``__init__``, which imports ``KPipeline`` and with it misaki's
English and eSpeak G2P (spaCy, phonemizer, espeakng-loader). The engine needs only the model,
and a GPU host that gets phonemes from a table (``--phoneme-table``) may not carry spaCy
(too big to ship to a machine without a network). So when the import fails for want of one of
the pipeline's packages, and only then, the model modules are imported from kokoro's folder
without running its ``__init__``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kokoro import KModel

REPO_ID = "hexgrad/Kokoro-82M"
PARTS = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")  # a checkpoint's parts
# what kokoro/pipeline.py needs and kokoro/model.py does not
PIPELINE_ONLY = frozenset({"misaki", "spacy", "phonemizer", "espeakng_loader", "num2words"})


def import_kmodel() -> type[KModel]:
    """kokoro's ``KModel`` class; raises ``ImportError`` if the model itself is not importable."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before huggingface_hub is first imported
    try:
        from kokoro import KModel
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] not in PIPELINE_ONLY:
            raise
        return _model_without_pipeline()
    return KModel


def _model_without_pipeline() -> type[KModel]:
    spec = importlib.util.find_spec("kokoro")  # locates the package without running it
    if spec is None or spec.submodule_search_locations is None:
        raise ModuleNotFoundError("kokoro is not installed", name="kokoro")
    package = importlib.util.module_from_spec(spec)  # an empty package: __init__ not run
    sys.modules["kokoro"] = package
    from loguru import logger

    logger.disable("kokoro")  # what kokoro's __init__ does: its debug logging stays quiet
    model_class: type[KModel] = importlib.import_module("kokoro.model").KModel
    package.KModel = model_class  # type: ignore[attr-defined]  # `from kokoro import KModel`
    return model_class
