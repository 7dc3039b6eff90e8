"""``Engine.prepare``: the one check of a synthesis, its typed refusals, and what it keeps."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from tts_protocol import ErrorCode
from tts_protocol.validation import parse_voice
from tts_server.engines import base
from tts_server.engines.base import Engine
from tts_server.engines.prepared import (
    NORMALIZED,
    Prepared,
    Refusal,
    UnknownVoice,
    UnsupportedText,
)
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed
from tts_server.normalize import Options

SHAPE = (510, 1, 256)


class Tables(Engine):
    """Real style tables, a pass-through G2P and a model that records each piece."""

    name = "tables"
    preferred_voice = "af_heart"

    def __init__(self, tables: dict[str, np.ndarray] | None = None) -> None:
        super().__init__(g2p=str.lower)  # type: ignore[arg-type]
        self._voices = tables or {
            "af_heart": np.full(SHAPE, 1.0, np.float32),
            "am_adam": np.full(SHAPE, 3.0, np.float32),
        }
        self.pieces: list[Piece] = []

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        self.pieces += pieces
        return [Timed(np.full(2400, 0.5, np.float32)) for _ in pieces]


@pytest.fixture
def engine() -> Iterator[Tables]:
    engine = Tables()
    yield engine
    engine.close()


@pytest.mark.parametrize(
    ("voice", "text", "refusal", "code", "status", "field", "says"),
    [
        ("af_nobody", "Hello.", UnknownVoice, ErrorCode.UNKNOWN_VOICE, 400, "voice", "af_nobody"),
        (
            "af_heart",
            "東京 is big.",
            UnsupportedText,
            ErrorCode.UNSUPPORTED_TEXT,
            422,
            "text",
            "CJK",
        ),
    ],
)
def test_each_refusal_has_its_code_status_and_field(
    engine: Tables,
    voice: str,
    text: str,
    refusal: type[Refusal],
    code: ErrorCode,
    status: int,
    field: str,
    says: str,
) -> None:
    with pytest.raises(Refusal) as caught:
        engine.prepare(text, parse_voice(voice))
    assert type(caught.value) is refusal
    assert (caught.value.code, caught.value.status, caught.value.field) == (code, status, field)
    assert says in caught.value.message and caught.value.message == str(caught.value)


def test_a_blend_whose_tables_do_not_mix_is_an_unknown_voice() -> None:
    engine = Tables({"a": np.ones(SHAPE, np.float32), "b": np.ones((10, 1, 256), np.float32)})
    try:
        with pytest.raises(UnknownVoice, match="different shapes"):
            engine.prepare("Hello.", parse_voice("a+b"))
    finally:
        engine.close()


def test_the_voice_is_checked_before_the_text(engine: Tables) -> None:
    with pytest.raises(UnknownVoice):
        engine.prepare("東京 is big.", parse_voice("af_nobody"))


def test_a_blend_is_kept_typed_and_named_canonically(engine: Tables) -> None:
    mix = parse_voice("am_adam(1)+af_heart(3)")
    prepared = engine.prepare("Hello.", mix, 1.25)
    assert prepared.voice is mix
    assert prepared.voice_name == "af_heart(0.75)+am_adam(0.25)"
    assert prepared.speed == 1.25
    assert engine.prepare("Hello.").voice == (("af_heart", 1.0),)  # None: the default voice


def test_the_normalize_switches_decide_how_the_text_is_read(engine: Tables) -> None:
    text = "It costs $5."
    assert engine.prepare(text).spoken.text == "It costs five dollars."
    assert engine.prepare(text, None, 1.0, None).spoken.text == text
    assert engine.prepare(text).normalization == NORMALIZED
    assert engine.prepare(text, None, 1.0, Options(symbols=False)).normalization == Options(
        symbols=False
    )


def test_a_part_is_the_same_synthesis_of_other_text(engine: Tables) -> None:
    prepared = engine.prepare("One. Two.", parse_voice("am_adam"), 0.8, None)
    part = prepared.part("Two.")
    assert part == Prepared("Two.", (("am_adam", 1.0),), 0.8, None)


def test_synthesize_checks_nothing_again(engine: Tables, monkeypatch: pytest.MonkeyPatch) -> None:
    prepared = engine.prepare("Hello there.", parse_voice("am_adam(1)+af_heart(1)"))

    def again(*args: object) -> None:
        raise AssertionError("checked a second time")

    monkeypatch.setattr(base, "check_speakable", again)
    monkeypatch.setattr(engine, "_voice", again)

    async def speak() -> int:
        return sum([chunk.audio.size async for chunk in engine.synthesize(prepared)])

    assert asyncio.run(speak()) > 0
    assert [piece.voice for piece in engine.pieces] == [prepared.voice]
