"""The embedded ONNX engine decoding in windows: a voice's first sentence whole, then windows."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tests.tts_server.spectra import spectral_distance
from tts_server.engines.base import Engine, Trim
from tts_server.engines.onnx.engine import OnnxEngine
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Chunk
from tts_server.engines.windows import SAMPLES_PER_FRAME, WindowPlan, speech_span

pytestmark = pytest.mark.slow
KEEP_ALL = Trim(threshold=0.0)  # keep every sample, so the chunks add up to the sentence
PLAN = WindowPlan(first=8, size=40, context=8, min_last=8, growth=2)
TEXT = "The quick brown fox jumps over the lazy dog near the river bank today."


@pytest.fixture(scope="module")
def windowed(engine: Engine) -> Iterator[OnnxEngine]:
    windowed = OnnxEngine(engine._g2p, trim=KEEP_ALL, windows=PLAN)  # type: ignore[attr-defined]
    yield windowed
    windowed.close()


@pytest.fixture(scope="module")
def whole(engine: Engine) -> Iterator[OnnxEngine]:
    """The same engine decoding every sentence whole: the reference."""
    whole = OnnxEngine(engine._g2p, trim=KEEP_ALL)  # type: ignore[attr-defined]
    yield whole
    whole.close()


async def spoken(engine: Engine, text: str, voice: str) -> list[Chunk]:
    prepared = engine.prepare(text, ((voice, 1.0),))
    return [chunk async for chunk in engine.synthesize(prepared)]


async def decoded(engine: OnnxEngine, text: str, voice: str) -> slice:
    """The samples of ``text``'s whole audio that its windows decode (its speech span)."""
    phonemes = (await engine.phonemize(text)).phonemes
    (started,) = engine._start_batch(0, [Piece(phonemes, ((voice, 1.0),), 1.0)])
    start, stop = started.span or (0, started.frames)
    return slice(start * SAMPLES_PER_FRAME, stop * SAMPLES_PER_FRAME)


async def test_a_voices_first_sentence_is_whole_then_its_sentences_come_in_windows(
    windowed: OnnxEngine,
) -> None:
    first = await spoken(windowed, TEXT, "jf_gongitsune")
    later = await spoken(windowed, TEXT, "jf_gongitsune")
    assert len(first) == 1  # decoded whole; the voice is calibrated before its second
    assert len(later) > 2
    whole, parts = first[0].audio, np.concatenate([c.audio for c in later])
    span = await decoded(windowed, TEXT, "jf_gongitsune")
    assert parts.size == span.stop - span.start < whole.size  # the silence is not decoded
    outside = np.concatenate([whole[: span.start], whole[span.stop :]])
    assert np.abs(outside).max() < Trim().threshold  # the trim would have dropped it all
    assert np.abs(parts).max() < 2 * np.abs(whole).max()  # no window lifted out of scale
    assert [w.text for c in later for w in c.words] == [w.text for w in first[0].words]
    for chunk in later:  # each word goes with the chunk its first sample is in
        assert all(0 <= w.start < chunk.audio.size for w in chunk.words)


async def test_the_default_voice_streams_from_its_first_sentence(windowed: OnnxEngine) -> None:
    chunks = await spoken(windowed, TEXT, windowed.default_voice)
    assert len(chunks) > 2  # calibrated when the engine loaded


async def test_after_a_short_first_sentence_a_voice_still_streams_at_its_level(
    windowed: OnnxEngine, whole: OnnxEngine
) -> None:
    # A prior from one short sentence ("Yes!") once made the next sentence's windows garbled
    # and up to thousands of times too loud; the calibrated prior keeps them near the whole.
    assert len(await spoken(windowed, "Yes!", "jf_nezumi")) == 1
    chunks = await spoken(windowed, TEXT, "jf_nezumi")
    (reference,) = await spoken(whole, TEXT, "jf_nezumi")
    audio = np.concatenate([c.audio for c in chunks])
    expected = reference.audio[await decoded(windowed, TEXT, "jf_nezumi")]
    assert len(chunks) > 2 and audio.size == expected.size
    level = np.sqrt(np.mean(audio**2) / np.mean(expected**2))
    assert 0.5 < level < 2.0  # measured 0.7-1.1 on ten sentences
    assert spectral_distance(audio, expected) < 7.0


async def test_a_short_sentence_is_decoded_whole_even_in_a_calibrated_voice(
    windowed: OnnxEngine, whole: OnnxEngine
) -> None:
    (chunk,) = await spoken(windowed, "No way, really?", windowed.default_voice)
    (reference,) = await spoken(whole, "No way, really?", windowed.default_voice)
    assert np.array_equal(chunk.audio, reference.audio)  # the whole graph's, exactly


async def test_a_closed_stream_decodes_no_further_window(windowed: OnnxEngine) -> None:
    await spoken(windowed, "Calibrate this voice first.", "jm_kumo")
    before = windowed.stats.pieces
    stream = windowed.synthesize(windowed.prepare(TEXT, (("jm_kumo", 1.0),)))
    assert (await anext(stream)).audio.size > 0
    await stream.aclose()  # what a cancelled segment does between two windows
    assert windowed.stats.pieces - before == 2  # the text side and the first window only


def test_a_piece_without_known_phonemes_has_no_windows(windowed: OnnxEngine) -> None:
    (started,) = windowed._start_batch(0, [Piece("", (("jf_alpha", 1.0),), 1.0)])
    assert started.frames == 0 and PLAN.windows(started.frames, started.lead) == []


def test_the_settings_decode_in_windows_by_default_on_the_onnx_engine_only() -> None:
    from tts_server.engines import window_plan
    from tts_server.settings import Settings, parse_settings

    assert window_plan(Settings()) == WindowPlan(8, 240, 4, growth=3.0)
    assert window_plan(Settings(engine="torch")) is None
    assert window_plan(parse_settings(["--no-windows"], env={})) is None
    assert window_plan(parse_settings([], env={"TTS_WINDOWS": "0"})) is None
    torch_on = parse_settings(["--engine", "torch", "--windows", "--window-growth", "3"], env={})
    assert window_plan(torch_on) == WindowPlan(8, 40, 16, growth=3.0)


def test_the_engines_threads_do_not_spin_unless_asked(windowed: OnnxEngine) -> None:
    import onnxruntime as ort

    from tts_server.engines.onnx.graph import session_options
    from tts_server.settings import parse_settings

    key = "session.intra_op.allow_spinning"
    split = windowed._lanes.models[0].wide
    assert split._decoder.get_session_options().get_session_config_entry(key) == "0"
    assert split._text.get_session_options().get_session_config_entry(key) == "0"
    spinning = session_options(ort, 2, spinning=True)
    assert spinning.get_session_config_entry(key) == "1" and spinning.intra_op_num_threads == 2
    assert parse_settings(["--onnx-spinning"], env={}).onnx_spinning
    assert parse_settings([], env={"TTS_ONNX_SPINNING": "1"}).onnx_spinning
    assert not parse_settings([], env={}).onnx_spinning


@pytest.mark.parametrize("voice", ["jf_alpha", "jm_kumo"])
async def test_what_the_windows_leave_undecoded_is_silence_in_the_whole_graph(
    windowed: OnnxEngine, voice: str
) -> None:
    split = windowed._lanes.models[0].wide
    for text, speed in [("Would you like to hear more about it?", 0.8), ("Well, hmm", 1.3)]:
        phonemes = (await windowed.phonemize(text)).phonemes
        tokens = [windowed._vocab[p] for p in phonemes if p in windowed._vocab]
        style = windowed._style(windowed._voice(((voice, 1.0),)), tokens)
        features = split.text(tokens, style, speed)
        audio, _ = split.whole(features)
        start, stop = speech_span(features.energy) or (0, 0)
        loud = np.flatnonzero(np.abs(audio) > Trim().threshold)
        pad = Trim().pad_ms * 24  # samples the trim keeps beyond the loud ones
        assert start * SAMPLES_PER_FRAME <= loud[0] - pad  # with room: measured >= 3 frames
        assert loud[-1] + pad < stop * SAMPLES_PER_FRAME


class Counted:
    """A lane's model that counts the runs it is given."""

    def __init__(self, model: object) -> None:
        self.model, self.runs = model, 0

    def __getattr__(self, name: str) -> object:
        method = getattr(self.model, name)

        def run(*args: object, **kwargs: object) -> object:
            self.runs += 1
            return method(*args, **kwargs)

        return run


async def test_two_lanes_side_by_side_run_narrow_and_speak_as_each_alone(
    engine: Engine,
) -> None:
    """Two lanes of two threads: a window decoded beside the other lane's runs, or while
    another listener's reply is under way, runs on the lane's one-thread session, and sounds
    as the same window decoded alone, on two threads."""
    g2p = engine._g2p  # type: ignore[attr-defined]
    pair = OnnxEngine(g2p, trim=KEEP_ALL, windows=PLAN, workers=2, lane_threads=2)
    try:
        counted = [(Counted(m.wide), Counted(m.narrow)) for m in pair._lanes.models]
        for models, (wide, narrow) in zip(pair._lanes.models, counted, strict=True):
            object.__setattr__(models, "wide", wide)
            object.__setattr__(models, "narrow", narrow)
        texts = (TEXT, "A second listener hears another sentence of about the same length.")
        together = await asyncio.gather(*(spoken(pair, text, "jf_alpha") for text in texts))
        assert sum(narrow.runs for _, narrow in counted) > 0
        for text, chunks in zip(texts, together, strict=True):
            narrow_runs = sum(narrow.runs for _, narrow in counted)
            alone = await spoken(pair, text, "jf_alpha")
            assert sum(narrow.runs for _, narrow in counted) == narrow_runs  # alone: wide
            both = [np.concatenate([c.audio for c in run]) for run in (chunks, alone)]
            assert np.array_equal(*both)
        with pair.decode_rate.streaming("another listener, between two of its windows"):
            narrow_runs = sum(narrow.runs for _, narrow in counted)
            await spoken(pair, TEXT, "jf_alpha")
            assert sum(narrow.runs for _, narrow in counted) > narrow_runs  # alone, but crowded
        runs = await lane_runs(pair, TEXT)
        assert {"text", "decode"} <= {name for _, names in runs for name in names}
        for brief, names in runs:  # a text side is brief: a window beside it runs wide
            assert brief == ("text" in names), runs
    finally:
        pair.close()


async def lane_runs(engine: OnnxEngine, text: str) -> list[tuple[bool, tuple[str, ...]]]:
    """Each lane run ``engine`` makes to speak ``text``: whether it was ``brief``, and the
    methods it called on the model it took."""
    runs: list[tuple[bool, tuple[str, ...]]] = []
    lanes = engine._lanes
    running = lanes.running

    @contextlib.contextmanager
    def recorded(lane: int, crowded: bool = False, brief: bool = False) -> Iterator[Any]:
        names: list[str] = []
        with running(lane, crowded, brief) as (model, options):
            yield Named(model, names), options
        runs.append((brief, tuple(names)))

    lanes.running = recorded  # type: ignore[method-assign]
    try:
        await spoken(engine, text, "jf_alpha")
    finally:
        del lanes.running
    return runs


class Named:
    """A lane's model that notes the name of each method taken from it."""

    def __init__(self, model: object, names: list[str]) -> None:
        self.model, self.names = model, names

    def __getattr__(self, name: str) -> object:
        self.names.append(name)
        return getattr(self.model, name)
