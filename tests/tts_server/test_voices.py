"""Voice blends: the mix of style tables, its bounded cache, and the engine's voice methods."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import torch

from tts_protocol.validation import parse_voice
from tts_server.engines import voices
from tts_server.engines.base import Engine, UnknownVoice
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


def test_an_unknown_voice_lists_the_voices_as_words_not_a_python_tuple() -> None:
    with pytest.raises(UnknownVoice) as caught:
        TableEngine(TABLES).resolve_voice(parse_voice("af_nobody"))
    assert str(caught.value) == (
        "unknown voice 'af_nobody'; available: af_heart, am_michael, bf_emma"
    )


def test_the_cache_mixes_each_blend_once_and_drops_the_least_recently_used() -> None:
    cache = BlendCache(size=2)
    first = cache.table("af_heart(0.5)+am_michael(0.5)", TABLES)
    assert cache.table("af_heart(0.5)+am_michael(0.5)", TABLES) is first
    cache.table("af_heart(0.5)+bf_emma(0.5)", TABLES)
    cache.table("af_heart(0.5)+am_michael(0.5)", TABLES)  # used again: now the most recent
    cache.table("am_michael(0.5)+bf_emma(0.5)", TABLES)  # evicts af_heart+bf_emma
    assert len(cache) == 2
    assert cache.table("af_heart(0.5)+am_michael(0.5)", TABLES) is first
    np.testing.assert_allclose(cache.table("af_heart(0.5)+bf_emma(0.5)", TABLES), table(5.5))


def test_resolve_voice_gives_plain_names_and_canonical_blends() -> None:
    engine = TableEngine(TABLES)
    assert engine.resolve_voice(None) == "af_heart"
    assert engine.resolve_voice(parse_voice("am_michael")) == "am_michael"
    assert (
        engine.resolve_voice(parse_voice("am_michael + af_heart"))
        == "af_heart(0.5)+am_michael(0.5)"
    )
    assert (
        engine.resolve_voice(parse_voice("bf_emma(1)+af_heart(3)"))
        == "af_heart(0.75)+bf_emma(0.25)"
    )
    assert engine.voices == ("af_heart", "am_michael", "bf_emma")  # blends are not listed


def test_style_table_serves_voices_as_loaded_and_blends_as_mixed() -> None:
    engine = TableEngine(TABLES)
    assert engine.style_table("bf_emma") is TABLES["bf_emma"]
    blend = engine.resolve_voice(parse_voice("af_heart(0.7)+am_michael(0.3)"))
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
        TableEngine(TABLES).resolve_voice(parse_voice(voice))  # test_validation.py
    assert problem in str(caught.value)


def test_a_resolved_blend_is_mixed_from_its_parsed_mix_without_parsing_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = TableEngine(TABLES)
    mix = parse_voice("af_heart(0.7)+am_michael(0.3)")

    def parse_again(name: str) -> object:
        raise AssertionError(f"{name!r} was parsed a second time")

    monkeypatch.setattr(voices, "parse_voice", parse_again)
    blend = engine.resolve_voice(mix)
    np.testing.assert_allclose(engine.style_table(blend), table(1.6), rtol=1e-6)


def test_a_blend_the_cache_dropped_is_mixed_again_from_its_name() -> None:
    engine = TableEngine(TABLES)
    first = engine.resolve_voice(parse_voice("af_heart(0.7)+am_michael(0.3)"))
    for weight in range(1, 33):  # as many newer blends as the cache holds (32)
        engine.resolve_voice(parse_voice(f"af_heart({weight})+bf_emma(1)"))
    np.testing.assert_allclose(engine.style_table(first), table(1.6), rtol=1e-6)


def test_a_blend_of_mismatched_tables_fails_when_resolved_not_mid_stream() -> None:
    engine = TableEngine({"a": table(1.0), "b": table(2.0, (10, 1, 256))})
    with pytest.raises(UnknownVoice, match="different shapes"):
        engine.resolve_voice(parse_voice("a+b"))
