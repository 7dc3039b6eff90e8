"""Voice blends: the mix of style tables, its bounded cache, and the engine's voice methods."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import torch

from tts_protocol import validation
from tts_protocol.validation import VoiceMix, parse_voice
from tts_server.engines.base import Engine
from tts_server.engines.prepared import UnknownVoice
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed
from tts_server.engines.voices import BlendCache, BlendMismatch, mix_tables

SHAPE = (510, 1, 256)


def table(value: float, shape: tuple[int, ...] = SHAPE) -> np.ndarray:
    return np.full(shape, value, dtype=np.float32)


TABLES = {"af_heart": table(1.0), "am_michael": table(3.0), "bf_emma": table(10.0)}


class TableEngine(Engine):
    """An engine with real style tables and no model: only its voice methods are used."""

    name = "tables"
    preferred_voice = "af_heart"

    def __init__(self, tables: dict[str, np.ndarray]) -> None:
        super().__init__(g2p=str.lower)  # type: ignore[arg-type]
        self._voices = tables

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        return [Timed(np.asarray(self.style_table(p.voice)).ravel()[:10]) for p in pieces]


def test_mix_is_the_share_weighted_sum_of_the_tables() -> None:
    mixed = mix_tables(parse_voice("af_heart(0.7)+am_michael(0.3)"), TABLES)
    np.testing.assert_allclose(mixed, table(0.7 * 1.0 + 0.3 * 3.0), rtol=1e-6)
    equal = mix_tables(parse_voice("af_heart+am_michael"), TABLES)
    np.testing.assert_allclose(equal, table(2.0), rtol=1e-6)


def test_mix_works_on_torch_tensors_too() -> None:
    tensors = {name: torch.from_numpy(values) for name, values in TABLES.items()}
    mixed = mix_tables(parse_voice("af_heart(1)+bf_emma(3)"), tensors)
    assert isinstance(mixed, torch.Tensor) and mixed.shape == SHAPE
    assert torch.allclose(mixed, torch.full(SHAPE, 0.25 * 1.0 + 0.75 * 10.0))


def test_tables_of_different_shapes_do_not_blend_and_say_so_in_words() -> None:
    with pytest.raises(BlendMismatch) as caught:
        mix_tables(parse_voice("a+b"), {"a": table(1.0), "b": table(1.0, (10, 1, 256))})
    assert str(caught.value) == (
        "cannot blend style tables of different shapes: a 510x1x256, b 10x1x256"
    )


def voice_of(engine: Engine, voice: str | None) -> VoiceMix:
    """The mix ``prepare`` keeps for ``voice`` (None: the default)."""
    return engine.prepare("Hello.", None if voice is None else parse_voice(voice)).voice


def test_an_unknown_voice_lists_the_voices_as_words_not_a_python_tuple() -> None:
    with pytest.raises(UnknownVoice) as caught:
        voice_of(TableEngine(TABLES), "af_nobody")
    assert str(caught.value) == (
        "unknown voice 'af_nobody'; available: af_heart, am_michael, bf_emma"
    )


def test_the_cache_mixes_each_blend_once_and_drops_the_least_recently_used() -> None:
    cache = BlendCache(size=2)
    heart_michael, heart_emma, michael_emma = (
        parse_voice(name)
        for name in ("af_heart+am_michael", "af_heart+bf_emma", "am_michael+bf_emma")
    )
    first = cache.table(heart_michael, TABLES)
    assert cache.table(heart_michael, TABLES) is first
    cache.table(heart_emma, TABLES)
    cache.table(heart_michael, TABLES)  # used again: now the most recent
    cache.table(michael_emma, TABLES)  # evicts af_heart+bf_emma
    assert len(cache) == 2
    assert cache.table(heart_michael, TABLES) is first
    np.testing.assert_allclose(cache.table(heart_emma, TABLES), table(5.5))


def test_prepare_keeps_plain_voices_and_blends_typed_with_canonical_names() -> None:
    engine = TableEngine(TABLES)
    assert voice_of(engine, None) == (("af_heart", 1.0),)
    assert voice_of(engine, "am_michael") == (("am_michael", 1.0),)
    assert voice_of(engine, "am_michael + af_heart") == (("af_heart", 0.5), ("am_michael", 0.5))
    blend = engine.prepare("Hello.", parse_voice("bf_emma(1)+af_heart(3)"))
    assert blend.voice == (("af_heart", 0.75), ("bf_emma", 0.25))
    assert blend.voice_name == "af_heart(0.75)+bf_emma(0.25)"
    assert engine.voices == ("af_heart", "am_michael", "bf_emma")  # blends are not listed


def test_style_table_serves_voices_as_loaded_and_blends_as_mixed() -> None:
    engine = TableEngine(TABLES)
    assert engine.style_table(voice_of(engine, "bf_emma")) is TABLES["bf_emma"]
    blend = voice_of(engine, "af_heart(0.7)+am_michael(0.3)")
    np.testing.assert_allclose(engine.style_table(blend), table(1.6), rtol=1e-6)
    assert engine.style_table(blend) is engine.style_table(blend)


@pytest.mark.parametrize(
    ("voice", "problem"),
    [
        ("af_nobody", "'af_nobody'"),
        ("af_heart+xx_one+yy_two", "'xx_one', 'yy_two'"),
    ],
)
def test_unknown_components_are_unknown_voice_naming_them(voice: str, problem: str) -> None:
    with pytest.raises(UnknownVoice) as caught:  # a malformed blend never gets here: see
        voice_of(TableEngine(TABLES), voice)  # test_validation.py
    assert problem in str(caught.value)


def test_a_blend_is_mixed_from_its_typed_mix_even_after_the_cache_dropped_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = TableEngine(TABLES)
    first = voice_of(engine, "af_heart(0.7)+am_michael(0.3)")
    newer = [parse_voice(f"af_heart({weight})+bf_emma(1)") for weight in range(1, 33)]

    def parse_again(name: str) -> object:
        raise AssertionError(f"{name!r} was parsed a second time")

    monkeypatch.setattr(validation, "parse_voice", parse_again)
    for mix in newer:  # as many newer blends as the cache holds (32)
        engine.prepare("Hello.", mix)
    np.testing.assert_allclose(engine.style_table(first), table(1.6), rtol=1e-6)


def test_a_blend_of_mismatched_tables_fails_when_prepared_not_mid_stream() -> None:
    engine = TableEngine({"a": table(1.0), "b": table(2.0, (10, 1, 256))})
    with pytest.raises(UnknownVoice, match="different shapes"):
        voice_of(engine, "a+b")
