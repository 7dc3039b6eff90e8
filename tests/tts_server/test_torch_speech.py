"""The PyTorch engine speaks: real Kokoro weights (imported from the embedded ONNX model)
against the ONNX engine, on the same tokens, style rows and speeds.

Small versions of ``bench/speech/torch_engine_speech.py`` (more sentences, the figures written):
stage by stage, intelligibility with offline Whisper, the batched path, word timings, speed
and blends. Torch on a shared CPU is slow: four short sentences, each model call once.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.speech.torch_engines import wer_of
from bench.speech.torch_rounding import activation_rounding, fake_int8
from bench.speech.torch_stages import OnnxReference, stage_comparison, style_row, token_ids
from tts_protocol.validation import parse_voice
from tts_server.engines.base import Engine
from tts_server.engines.g2p import Phonemized, phonemize
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed
from tts_server.engines.torch.engine import TorchEngine

# Seconds each on an idle 2-core CPU; a shared, loaded one runs torch ten times slower.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
ITEMS = (  # (text, voice, speed): mixed lengths, two voices, two speeds
    ("Good morning.", "jf_alpha", 1.0),
    ("The train leaves from the old station.", "jm_kumo", 1.0),
    ("Please close the window.", "jm_kumo", 1.2),
    ("Thank you very much for your help today.", "jf_alpha", 1.2),
)
FRAME = 600  # samples per duration frame
WER_MARGIN = 0.02


@pytest.fixture(scope="module")
def onnx_reference() -> OnnxReference:
    return OnnxReference()


@pytest.fixture(scope="module")
def phonemized(engine: Engine) -> list[Phonemized]:
    return [phonemize(engine._g2p, text) for text, _, _ in ITEMS]


def pieces(phonemized: list[Phonemized]) -> list[Piece]:
    return [
        Piece(p.phonemes, parse_voice(voice), speed)
        for p, (_, voice, speed) in zip(phonemized, ITEMS, strict=True)
    ]


@pytest.fixture(scope="module")
def alone(
    real_torch_engine: TorchEngine, whole_engine: Engine, phonemized: list[Phonemized]
) -> dict[str, list[Timed]]:
    """Each item synthesized alone by each engine, through the engines' own (whole) model calls."""
    torch.manual_seed(0)
    return {
        name: [one._infer_batch(0, [piece])[0] for piece in pieces(phonemized)]
        for name, one in (("onnx", whole_engine), ("torch", real_torch_engine))
    }


def test_the_torch_engine_speaks_with_the_onnx_engines_voices(
    real_torch_engine: TorchEngine, engine: Engine
) -> None:
    assert (
        real_torch_engine.voices
        == engine.voices
        == (
            "jf_alpha",
            "jf_gongitsune",
            "jf_nezumi",
            "jf_tebukuro",
            "jm_kumo",
        )
    )
    for voice in map(parse_voice, engine.voices):
        ours = real_torch_engine.style_table(voice).cpu().numpy()
        np.testing.assert_array_equal(ours, engine.style_table(voice))


def test_stage_by_stage_durations_prosody_and_audio_match_the_onnx_model(
    real_torch_engine: TorchEngine, onnx_reference: OnnxReference, phonemized: list[Phonemized]
) -> None:
    row = stage_comparison(
        onnx_reference, real_torch_engine._batched, phonemized[1].phonemes, "jm_kumo", redraw=False
    )
    # The ONNX graph quantizes activations to int8 on the fly, this model runs float32: a
    # duration near .5 may round the other way, never by more than one frame.
    assert row["max_token_frame_difference"] <= 1
    assert row["tokens_off_by_one"] <= row["tokens"] // 10  # 1 to 3 of 40 to 75 measured
    assert abs(row["frames_torch"] - row["frames_onnx"]) <= 3
    assert row["f0_relative_error"] < 0.02
    assert row["energy_relative_error"] < 0.03
    assert row["asr_relative_error"] < 0.02
    # The export's iSTFT is 1.5 times louder than torch.istft; the rest is noise draws + int8.
    assert 1.3 < row["decoder_gain"] < 1.6
    assert row["decoder_snr_db"] > 10.0
    assert row["log_spectral_distance_db"] < 8.0


def test_whisper_understands_the_torch_engine_as_well_as_the_onnx_engine(
    alone: dict[str, list[Timed]],
) -> None:
    paragraph = " ".join(text for text, _, _ in ITEMS)
    heard = {
        name: wer_of(np.concatenate([t.audio for t in timed]), paragraph)
        for name, timed in alone.items()
    }
    assert heard["torch"][0] <= heard["onnx"][0] + WER_MARGIN, heard


def test_each_item_of_a_mixed_batch_is_heard_as_when_alone(
    real_torch_engine: TorchEngine, phonemized: list[Phonemized], alone: dict[str, list[Timed]]
) -> None:
    batch = real_torch_engine._infer_batch(0, pieces(phonemized))
    assert len(batch) == len(ITEMS)
    for (text, _, _), single, batched in zip(ITEMS, alone["torch"], batch, strict=True):
        assert batched.bounds is not None and single.bounds is not None
        np.testing.assert_array_equal(batched.bounds, single.bounds)  # same durations
        wer_single, heard_single = wer_of(single.audio, text)
        wer_batched, heard_batched = wer_of(batched.audio, text)
        assert wer_batched <= wer_single + WER_MARGIN, (heard_single, heard_batched)


def test_fake_int8_is_onnxruntimes_dynamic_uint8_rounding() -> None:
    x = torch.tensor([-1.0, -0.25, 0.0, 0.1, 3.0])
    step = 4.0 / 255
    rounded = fake_int8(x)
    assert float(rounded[2]) == 0.0  # zero is exact (the range is widened to hold it)
    assert torch.allclose(rounded / step, torch.round(rounded / step), atol=1e-4)  # on the grid
    assert float((rounded - x).abs().max()) <= step / 2 + 1e-6
    assert torch.equal(fake_int8(torch.ones(3)), torch.tensor([1.0, 1.0, 1.0]))  # [0, 1]
    assert torch.equal(fake_int8(torch.zeros(2)), torch.zeros(2))


def test_the_exports_int8_activations_are_why_its_numbers_differ(
    real_torch_engine: TorchEngine, onnx_reference: OnnxReference, phonemized: list[Phonemized]
) -> None:
    ids = token_ids(phonemized[1].phonemes, onnx_reference.vocab)
    errors = activation_rounding(real_torch_engine._batched, ids)
    assert len(errors["float32"]) == len(errors["emulated_int8"]) == 12
    # With the export's rounding emulated, PL-BERT's first layer is close to the export's...
    assert errors["emulated_int8"][0] < errors["float32"][0] / 5
    # ...then roundings flip and the difference grows to float32's size: rounding noise.
    assert errors["emulated_int8"][-1] > 5 * errors["emulated_int8"][0]
    assert errors["emulated_int8"][-1] > errors["float32"][-1] / 2


def test_word_timings_are_within_a_frame_or_two_of_the_onnx_engines(
    phonemized: list[Phonemized], alone: dict[str, list[Timed]]
) -> None:
    """A word's edges move with the durations before them: one frame per token that rounded
    the other way, so mostly within one frame, two where two such tokens add up."""
    apart = []
    for words, ours, theirs in zip(phonemized, alone["torch"], alone["onnx"], strict=True):
        assert ours.bounds is not None and theirs.bounds is not None
        for word in words.words:
            for edge in (word.start, word.end):
                apart.append(abs(int(ours.bounds[edge]) - int(theirs.bounds[edge])) / FRAME)
    assert len(apart) == 2 * sum(len(words.words) for words in phonemized) >= 30
    assert max(apart) <= 2
    assert np.mean(np.array(apart) <= 1) >= 0.75, apart


def test_speed_and_blends_change_durations_as_on_the_onnx_engine(
    real_torch_engine: TorchEngine,
    engine: Engine,
    onnx_reference: OnnxReference,
    phonemized: list[Phonemized],
) -> None:
    blend = parse_voice("jf_alpha(0.7)+jm_kumo(0.3)")
    prepared = [one.prepare("Hello.", blend) for one in (real_torch_engine, engine)]
    assert prepared[0].voice == prepared[1].voice == blend
    ids = token_ids(phonemized[3].phonemes, onnx_reference.vocab)
    totals = {}
    voices = (parse_voice("jf_alpha"), blend)
    for voice in voices:
        style = style_row(engine.style_table(voice), ids)
        mixed = real_torch_engine.style_table(voice)[len(ids) - 3].cpu().numpy().ravel()
        np.testing.assert_allclose(mixed, style, atol=1e-6)  # the same blend on both engines
        for speed in (1.0, 1.5):
            theirs = onnx_reference(ids, style, speed).durations
            (ours,) = real_torch_engine._batched.durations(
                [ids], torch.from_numpy(style[None]), [speed]
            )
            assert np.abs(np.subtract(ours, theirs)).max() <= 1, (voice, speed)
            totals[voice, speed] = (sum(ours), sum(theirs))
    for voice in voices:
        for side in (0, 1):  # at 1.5 times the speed, about two thirds of the frames
            ratio = totals[voice, 1.5][side] / totals[voice, 1.0][side]
            assert 0.6 < ratio < 0.73, (voice, side, ratio)
