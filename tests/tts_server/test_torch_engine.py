"""TorchEngine's real loading code against a small random Kokoro checkpoint (no hub access)."""

from __future__ import annotations

import asyncio
import itertools
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from kokoro import KModel

from tests.tts_server.tiny_kokoro import (
    Checkpoint,
    random_checkpoint,
    tiny_config,
    write_model_dir,
)
from tts_protocol import check_voice
from tts_protocol.validation import VoiceMix
from tts_server.engines.base import EngineError, Trim
from tts_server.engines.g2p import EnglishG2P
from tts_server.engines.prepared import UnknownVoice
from tts_server.engines.scheduler import Piece
from tts_server.engines.torch.engine import TorchEngine
from tts_server.engines.torch.kmodel import PARTS

HEART, ADAM = (("af_heart", 1.0),), (("am_adam", 1.0),)  # two voices, as prepare keeps them
KEEP_ALL = Trim(threshold=0.0)  # random weights: do not let trimming decide what is "silence"


class NotATensor:
    """Pickled by reference, so a weights-only load must refuse it."""


@pytest.fixture(scope="module", autouse=True)
def no_hub() -> Iterator[None]:
    """Fail any attempt by kokoro to reach the Hugging Face hub."""
    import kokoro.model
    import kokoro.pipeline

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"hub download attempted: {args} {kwargs}")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kokoro.model, "hf_hub_download", refuse)
        patch.setattr(kokoro.pipeline, "hf_hub_download", refuse)
        yield


@pytest.fixture(scope="module")
def g2p() -> EnglishG2P:
    return EnglishG2P()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where checkpoints go; removed afterwards (each is ~235 MB)."""
    root = tmp_path_factory.mktemp("tiny_kokoro")
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def scratch(store: Path) -> Path:
    return Path(tempfile.mkdtemp(dir=store))


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return tiny_config()


@pytest.fixture(scope="module")
def checkpoint(config: dict[str, Any]) -> Checkpoint:
    return random_checkpoint(config)


@pytest.fixture(scope="module")
def model_dir(store: Path, config: dict[str, Any], checkpoint: Checkpoint) -> Path:
    return write_model_dir(store / "model", config, checkpoint)


@pytest.fixture(scope="module")
def weights(model_dir: Path) -> Path:
    return model_dir / "kokoro-v1_0.pth"


@pytest.fixture(scope="module")
def engine(g2p: EnglishG2P, model_dir: Path) -> TorchEngine:
    """Overrides the session-wide ONNX ``engine`` fixture for this module."""
    return TorchEngine(g2p, model_dir, trim=KEEP_ALL)


def edited(checkpoint: Checkpoint, edit: Callable[[Checkpoint], None]) -> Checkpoint:
    copy = {part: dict(state) for part, state in checkpoint.items()}
    edit(copy)
    return copy


# -- loading and synthesis -------------------------------------------------------------------


def test_loads_on_the_default_device(engine: TorchEngine) -> None:
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert engine.name == "torch"
    assert engine.device.type == expected
    assert {p.device.type for p in engine._model.parameters()} == {expected}
    assert not engine._model.training


@pytest.fixture(scope="module")
def eager_engine(g2p: EnglishG2P, model_dir: Path) -> TorchEngine:
    """The same checkpoint without the load-time speed-ups: kokoro's modules as they are."""
    return TorchEngine(g2p, model_dir, trim=KEEP_ALL, remove_weight_norm=False, fuse_styles=False)


def test_weights_come_from_the_checkpoint(
    eager_engine: TorchEngine, checkpoint: Checkpoint
) -> None:
    # The fixture's keys carry kokoro-v1_0.pth's "module." prefix, which must be stripped.
    for part in PARTS:
        loaded = getattr(eager_engine._model, part).state_dict()
        saved = {key.removeprefix("module."): value for key, value in checkpoint[part].items()}
        assert loaded.keys() == saved.keys()
        for key, value in saved.items():
            assert torch.equal(loaded[key].cpu(), value), (part, key)


@pytest.mark.parametrize("voice", [None, "am_adam"])
async def test_synthesizes_float32_audio(engine: TorchEngine, voice: str | None) -> None:
    prepared = engine.prepare("Hello world.", check_voice(voice))
    chunks = [chunk.audio async for chunk in engine.synthesize(prepared)]
    assert chunks
    for chunk in chunks:
        assert chunk.dtype == np.float32
        assert chunk.ndim == 1
        assert chunk.size > 0
        assert np.isfinite(chunk).all()


def test_infer_without_known_phonemes_is_empty(engine: TorchEngine) -> None:
    (timed,) = engine._infer_batch(0, [Piece("", HEART, 1.0)])
    audio = timed.audio
    assert audio.dtype == np.float32
    assert audio.size == 0


def test_voices_from_voice_files(engine: TorchEngine) -> None:
    assert engine.voices == ("af_heart", "am_adam")
    assert engine.default_voice == "af_heart"
    assert engine.prepare("Hello.").voice == (("af_heart", 1.0),)


def test_default_voice_is_first_sorted_without_af_heart(
    g2p: EnglishG2P, config: dict[str, Any], weights: Path, scratch: Path
) -> None:
    write_model_dir(scratch, config, weights, voices=("bf_emma", "am_michael"))
    engine = TorchEngine(g2p, scratch, device="cpu")
    assert engine.voices == ("am_michael", "bf_emma")
    assert engine.default_voice == "am_michael"


def test_loads_keys_without_module_prefix(
    g2p: EnglishG2P, config: dict[str, Any], checkpoint: Checkpoint, scratch: Path
) -> None:
    plain = {
        part: {key.removeprefix("module."): value for key, value in state.items()}
        for part, state in checkpoint.items()
    }
    write_model_dir(scratch, config, plain)
    assert TorchEngine(g2p, scratch, device="cpu").voices == ("af_heart", "am_adam")


def test_unknown_voice(engine: TorchEngine) -> None:
    with pytest.raises(UnknownVoice, match="af_heart, am_adam"):
        engine.prepare("Hello.", check_voice("xx_nobody"))


def test_cuda_requested_without_cuda(
    monkeypatch: pytest.MonkeyPatch, g2p: EnglishG2P, model_dir: Path
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(EngineError, match="CUDA is not available"):
        TorchEngine(g2p, model_dir, device="cuda")


def test_invalid_device(g2p: EnglishG2P, model_dir: Path) -> None:
    with pytest.raises(EngineError, match="invalid torch device"):
        TorchEngine(g2p, model_dir, device="toaster")


# -- directory layout (all fail before the model is built) -----------------------------------


def _remove(name: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        target = root / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()

    return edit


def _second_checkpoint(root: Path) -> None:
    (root / "extra.pth").symlink_to(root / "kokoro-v1_0.pth")


def _empty_voices(root: Path) -> None:
    for path in (root / "voices").glob("*.pt"):
        path.unlink()


def _save_voice(value: object) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        torch.save(value, root / "voices" / "am_adam.pt")

    return edit


def _write_config(text: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        (root / "config.json").write_text(text, encoding="utf-8")

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_remove("config.json"), r"config\.json is missing; .* must hold config\.json"),
        (_remove("kokoro-v1_0.pth"), r"exactly one \*\.pth checkpoint \(found: none\)"),
        (_second_checkpoint, r"found: extra\.pth, kokoro-v1_0\.pth"),
        (_remove("voices"), r"voices is missing; .*voices/<name>\.pt"),
        (_empty_voices, r"voices holds no \*\.pt voice tables"),
        (_save_voice(torch.zeros(510, 256)), r"am_adam\.pt has shape \(510, 256\)"),
        (_save_voice(torch.zeros(510, 1, 256, dtype=torch.long)), r"am_adam\.pt must hold a float"),
        (_save_voice({"style": torch.zeros(510, 1, 256)}), r"am_adam\.pt must hold a float"),
        (
            _save_voice(NotATensor()),
            r"cannot load voice table .*am_adam\.pt: WeightsUnpickler error",
        ),
        (_write_config("{not json"), r"config\.json is not readable JSON"),
        (_write_config('{"vocab": {"a": 1}}'), r"config\.json lacks Kokoro config keys: n_token"),
    ],
    ids=[
        "no-config",
        "no-checkpoint",
        "two-checkpoints",
        "no-voices-dir",
        "empty-voices-dir",
        "voice-shape",
        "voice-dtype",
        "voice-not-tensor",
        "voice-not-weights-only",
        "config-not-json",
        "config-incomplete",
    ],
)
def test_bad_layout(
    g2p: EnglishG2P,
    config: dict[str, Any],
    weights: Path,
    scratch: Path,
    edit: Callable[[Path], None],
    message: str,
) -> None:
    write_model_dir(scratch, config, weights)
    edit(scratch)
    with pytest.raises(EngineError, match=message):
        TorchEngine(g2p, scratch, device="cpu")


def test_missing_model_dir(g2p: EnglishG2P, tmp_path: Path) -> None:
    with pytest.raises(EngineError, match=r"nowhere does not exist; it must hold config\.json"):
        TorchEngine(g2p, tmp_path / "nowhere", device="cpu")


# -- checkpoint contents (the strict load) ---------------------------------------------------


def _drop_part(ckpt: Checkpoint) -> None:
    del ckpt["decoder"]


def _add_part(ckpt: Checkpoint) -> None:
    ckpt["vocoder"] = {}


def _drop_key(ckpt: Checkpoint) -> None:
    del ckpt["predictor"][next(iter(ckpt["predictor"]))]


def _add_key(ckpt: Checkpoint) -> None:
    ckpt["text_encoder"]["module.stray.weight"] = torch.zeros(3)


def _reshape_key(ckpt: Checkpoint) -> None:
    ckpt["bert_encoder"]["module.weight"] = torch.zeros(7, 7)


def _not_weights_only(ckpt: Checkpoint) -> None:
    ckpt["bert_encoder"]["module.weight"] = NotATensor()  # type: ignore[assignment]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_drop_part, r"must hold exactly the parts .*missing: decoder; unexpected: none"),
        (_add_part, r"missing: none; unexpected: vocoder"),
        (_drop_key, r"(?s)part 'predictor' does not match .*Missing key"),
        (_add_key, r"(?s)part 'text_encoder' does not match .*Unexpected key.*stray\.weight"),
        (_reshape_key, r"(?s)cannot build Kokoro from .*size mismatch"),
        (
            _not_weights_only,
            r"as a weights-only checkpoint: WeightsUnpickler error: Unsupported global",
        ),
    ],
    ids=["missing-part", "extra-part", "missing-key", "extra-key", "wrong-shape", "pickled-object"],
)
def test_bad_checkpoint(
    g2p: EnglishG2P,
    config: dict[str, Any],
    checkpoint: Checkpoint,
    scratch: Path,
    edit: Callable[[Checkpoint], None],
    message: str,
) -> None:
    write_model_dir(scratch, config, edited(checkpoint, edit))
    with pytest.raises(EngineError, match=message):
        TorchEngine(g2p, scratch, device="cpu")


# -- batched synthesis -------------------------------------------------------------------------

BATCH_TOLERANCE = 1e-4  # of full scale; measured differences are ~3e-6 (float rounding)
MIXED = ("Hi.", "The quick brown fox jumps over the lazy dog.", "Batching keeps the GPU busy.")


@pytest.fixture(scope="module")
def reference(config: dict[str, Any], weights: Path) -> KModel:
    """kokoro's own KModel from the same checkpoint: the unbatched reference."""
    return KModel(repo_id="hexgrad/Kokoro-82M", config=config, model=str(weights)).eval()


def test_each_item_of_a_mixed_batch_equals_its_unbatched_synthesis(
    engine: TorchEngine, g2p: EnglishG2P, reference: KModel
) -> None:
    """Weight norm folded and styles fused, padded and masked: each item as kokoro alone."""
    phonemes = [g2p(text) for text in MIXED]
    token_ids = [[0, *(engine._vocab[p] for p in x if p in engine._vocab), 0] for x in phonemes]
    assert len({len(ids) for ids in token_ids}) == len(MIXED)  # really mixed lengths
    table = engine.style_table(HEART)
    styles = torch.stack([table[len(x) - 1].reshape(-1) for x in phonemes]).cpu()
    speeds = [1.0, 1.25, 0.8]
    seeds = [11, 12, 13]  # the harmonic source's noise: the same draws on both sides
    batch = engine._batched(
        token_ids, styles, speeds, [torch.Generator().manual_seed(s) for s in seeds]
    )
    for item, ids in enumerate(token_ids):
        torch.manual_seed(seeds[item])
        audio, durations = reference.forward_with_tokens(
            torch.tensor([ids]), styles[item : item + 1], speeds[item]
        )
        assert batch.durations[item] == durations.tolist()
        assert batch.audio[item].shape == (sum(durations.tolist()) * 600,)
        difference = (batch.audio[item].cpu() - audio.reshape(-1)).abs().max().item()
        assert difference < BATCH_TOLERANCE, (item, difference)


def test_speed_ups_off_give_the_same_audio(engine: TorchEngine, eager_engine: TorchEngine) -> None:
    assert not any(name.endswith("weight_g") for name, _ in engine._model.named_parameters())
    assert any(name.endswith("weight_g") for name, _ in eager_engine._model.named_parameters())
    token_ids = [[0, 50, 83, 156, 16, 0], [0, 43, 102, 0]]
    styles = engine.style_table(ADAM)[:2].reshape(2, -1).cpu()
    outputs = [
        model._batched(token_ids, styles, [1.0, 1.0], [torch.Generator().manual_seed(3)] * 2)
        for model in (engine, eager_engine)
    ]
    for fast, eager in zip(outputs[0].audio, outputs[1].audio, strict=True):
        assert (fast - eager).abs().max().item() < BATCH_TOLERANCE


async def test_concurrent_texts_share_one_forward_pass(
    g2p: EnglishG2P, model_dir: Path, engine: TorchEngine
) -> None:
    batched = TorchEngine(g2p, model_dir, trim=KEEP_ALL, max_batch=3, batch_wait_ms=30_000)
    try:
        assert batched.max_batch == 3 and engine.max_batch == 1  # CPU default: unbatched

        async def speak(text: str, voice: VoiceMix) -> list[np.ndarray]:
            return [chunk.audio async for chunk in batched.synthesize(batched.prepare(text, voice))]

        short = ("Hello there.", "Good morning.", "See you soon.")  # one length bucket
        voices = (HEART, ADAM, HEART)
        results = await asyncio.gather(*(speak(t, v) for t, v in zip(short, voices, strict=True)))
        assert batched.stats.batches == 1 and batched.stats.pieces == 3
        for text, voice, chunks in zip(short, voices, results, strict=True):
            alone = [chunk.audio async for chunk in engine.synthesize(engine.prepare(text, voice))]
            assert [c.size for c in chunks] == [c.size for c in alone]  # same durations
    finally:
        batched.close()


def test_a_batch_with_an_unspeakable_piece(engine: TorchEngine) -> None:
    timed = engine._infer_batch(0, [Piece("", HEART, 1.0), Piece("hɛlˈO", HEART, 1.0)])
    assert timed[0].audio.size == 0 and timed[1].audio.size > 0


async def test_word_timings_come_from_the_forward_pass_durations(engine: TorchEngine) -> None:
    text = "The quick brown fox jumps over the dog."
    chunks = [c async for c in engine.synthesize(engine.prepare(text, HEART))]
    words = [w for chunk in chunks for w in chunk.words]
    assert [w.text for w in words] == text.rstrip(".").split(" ")
    (chunk,) = chunks
    assert all(0 <= w.start < w.end <= chunk.audio.size for w in words)
    assert all(a.end <= b.start for a, b in itertools.pairwise(words))


def test_a_batched_forward_times_each_piece_as_if_alone(engine: TorchEngine) -> None:
    pieces = [Piece("hɛlˈO wˈɜɹld.", HEART, 1.0), Piece("ðə kwˈɪk fˈɑks.", ADAM, 1.3)]
    together = engine._infer_batch(0, pieces)  # one forward pass over both
    for piece, timed in zip(pieces, together, strict=True):
        (alone,) = engine._infer_batch(0, [piece])
        assert timed.bounds is not None and alone.bounds is not None
        assert np.array_equal(timed.bounds, alone.bounds)
        assert timed.bounds.size == len(piece.phonemes) + 1
        assert timed.bounds[-1] < timed.audio.size  # the trailing pad's frames come after
        assert np.all(np.diff(timed.bounds) >= 0)


def test_building_kokoro_warns_nothing_at_load(
    g2p: EnglishG2P, config: dict[str, Any], weights: Path, scratch: Path
) -> None:
    """kokoro's deprecated weight norm and its one-layer LSTMs' dropout (0.2 in the real config)
    make no FutureWarning and no UserWarning at start."""
    write_model_dir(scratch, {**config, "dropout": 0.2}, weights)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", UserWarning)
        assert TorchEngine(g2p, scratch, device="cpu").voices == ("af_heart", "am_adam")
