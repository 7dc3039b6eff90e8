"""Whisper on a window fitted to the utterance: its size, its rules of doubt, on tiny.en."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from faster_whisper import WhisperModel

from agent.browser_leg import MIC_SAMPLE_RATE
from agent.config import ListeningConfig
from agent.listening import fitted_window
from agent.listening.fitted_window import (
    MAX_COMPRESSION,
    MIN_TOKENS,
    TOKENS_PER_S,
    collapsed,
    compression_ratio,
    english_decoding,
    fitted,
    loops,
    settled,
    surest,
    timed,
    window_frames,
)
from agent.listening.recognizer import RecognitionError
from agent.listening.whisper import WhisperRecognizer, default_model_path
from bench.speech.intelligibility import word_error_rate
from tests.agent.listening.speech import silence, spoken
from tts_protocol import pcm16_to_float
from tts_server.engines import Engine

SENTENCE = "Please tell me a short story about a friendly robot."
RATE = MIC_SAMPLE_RATE


@pytest.fixture(scope="module")
def whisper() -> WhisperModel:
    return WhisperModel(
        default_model_path(), device="cpu", compute_type="int8", local_files_only=True
    )


@pytest.fixture(scope="module")
def utterance(engine: Engine) -> np.ndarray:
    """The sentence as the endpointer cuts it: a little silence before, 256 ms after."""
    return pcm16_to_float(silence(200) + spoken(engine, SENTENCE) + silence(256))


class Scripted:
    """tiny.en whose decoder answers ``tokens`` with ``score`` (or raises ``error``); the
    features, the encoder and the tokenizer are the real ones. ``frames``: what it encoded."""

    def __init__(self, real: WhisperModel, text: str, score: float = -0.2) -> None:
        self._real = real
        self.feature_extractor = real.feature_extractor
        self.hf_tokenizer = real.hf_tokenizer
        self.tokens = english_decoding(real)[0].encode(" " + text) if text else []
        self.score = score
        self.error: Exception | None = None
        self.frames: list[int] = []
        self.limits: list[int] = []
        self.options: list[dict[str, Any]] = []  # what each decoding was asked with
        self.scores: list[float] = []  # one per reading of a batch (empty: ``score`` for each)
        self.no_speech = 0.0
        self.batches: list[int] = []  # the readings asked for at once
        self.answers: list[tuple[str, float]] = []  # each reading's, in order (over ``scores``)
        self.encoded: list[np.ndarray] = []  # each batch's features
        self.prompts: list[list[int]] = []  # each batch's prompt (the same for its readings)
        self.model = SimpleNamespace(is_multilingual=False, generate=self._generate)

    def encode(self, features: np.ndarray) -> Any:
        self.frames.append(features.shape[-1])
        self.encoded.append(features)
        return self._real.encode(features)

    def _generate(self, encoded: Any, prompts: list[list[int]], **options: Any) -> list[Any]:
        if self.error is not None:
            raise self.error
        self.limits.append(options["max_length"] - len(prompts[0]))
        self.prompts.append(prompts[0])
        self.options.append(options)
        tokens = self.tokens[: self.limits[-1]]
        scores = self.scores or [self.score] * len(prompts)
        answers = [(tokens, score) for score in scores]
        if self.answers:
            answers = [(self._encoded(text), score) for text, score in self.answers[: len(prompts)]]
            del self.answers[: len(prompts)]
        self.batches.append(len(prompts))
        return [
            SimpleNamespace(sequences_ids=[ids], scores=[score], no_speech_prob=self.no_speech)
            for ids, score in answers
        ]

    def _encoded(self, text: str) -> list[int]:
        return english_decoding(self._real)[0].encode(" " + text)


@pytest.mark.parametrize(
    ("seconds", "context_s", "frames"),
    [
        (2.0, 8.0, 1000),
        (2.01, 8.0, 1100),  # whole seconds, rounded up: never shorter than clip + context
        (3.5, 2.5, 600),
        (2.0, 0.5, 300),  # under a second of context is still a fitted window
        (21.0, 8.0, 2900),
        (21.01, 8.0, None),  # 30 s is Whisper's own window: nothing to gain
        (29.0, 8.0, None),
        (3.0, 0.0, None),  # 0: always the whole window
    ],
)
def test_the_window_is_the_clip_and_its_context_in_whole_seconds(
    seconds: float, context_s: float, frames: int | None
) -> None:
    assert window_frames(round(seconds * RATE), RATE, context_s) == frames


def test_repetition_compresses_past_whispers_limit_and_a_sentence_does_not() -> None:
    assert compression_ratio("") == 0.0
    assert compression_ratio(SENTENCE) < MAX_COMPRESSION
    assert compression_ratio(" ".join([SENTENCE] * 6)) > MAX_COMPRESSION


def test_the_projects_speech_is_read_on_a_fitted_window(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    text = fitted(whisper, utterance, RATE, 8.0)
    assert text is not None
    assert word_error_rate(SENTENCE, text) <= 0.2, text


def test_silence_on_a_fitted_window_is_never_text(whisper: WhisperModel) -> None:
    """Whisper doubts what it reads in silence: the whole window and its no-speech rule
    decide (``test_whisper``: silence is recognized as nothing)."""
    assert not fitted(whisper, pcm16_to_float(silence(1500)), RATE, 8.0)


def test_the_encoder_reads_the_fitted_window_and_the_decoder_a_bounded_number_of_tokens(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    model = Scripted(whisper, SENTENCE)
    assert fitted(model, utterance, RATE, 8.0) == SENTENCE  # type: ignore[arg-type]
    seconds = utterance.size / RATE
    assert model.frames == [window_frames(utterance.size, RATE, 8.0)]
    assert model.limits == [max(MIN_TOKENS, int(np.ceil(seconds * TOKENS_PER_S)))]
    too_long = np.zeros(23 * RATE, dtype=np.float32)  # with 8 s of context: 31 s
    assert fitted(model, too_long, RATE, 8.0) is None
    assert model.frames == [window_frames(utterance.size, RATE, 8.0)]  # not encoded


@pytest.mark.parametrize(
    ("text", "score"),
    [
        (SENTENCE, -1.2),  # unsure of its words
        (" ".join([SENTENCE] * 8), -0.1),  # looping: cut at the token limit
        ("no no no no no no no no no no no no no no no no no no no no", -0.1),  # repeating
    ],
)
def test_a_decoding_whisper_would_doubt_is_left_to_the_whole_window(
    whisper: WhisperModel, utterance: np.ndarray, text: str, score: float
) -> None:
    assert fitted(Scripted(whisper, text, score), utterance, RATE, 8.0) is None  # type: ignore[arg-type]


def test_a_sure_decoding_at_the_log_probability_limit_is_kept(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    model = Scripted(whisper, SENTENCE)
    count = len(model.tokens)
    model.score = -1.0 * (count + 1) / count  # its average, as faster-whisper counts: -1.0
    assert fitted(model, utterance, RATE, 8.0) == SENTENCE  # type: ignore[arg-type]
    model.score -= 0.01
    assert fitted(model, utterance, RATE, 8.0) is None  # type: ignore[arg-type]


def recognizer_on(model: Scripted, context_s: float) -> WhisperRecognizer:
    recognizer = WhisperRecognizer(context_s=context_s)
    recognizer._model = model  # type: ignore[assignment]  # loaded: the scripted model
    model.transcribe = lambda audio, **options: (  # type: ignore[attr-defined]
        iter([SimpleNamespace(text=" the whole window", no_speech_prob=0.0, avg_logprob=-0.2)]),
        None,
    )
    return recognizer


def test_the_recognizer_takes_a_sure_fitted_reading_and_else_the_whole_window(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    pcm = (utterance * 32767).astype("<i2").tobytes()
    sure = Scripted(whisper, SENTENCE)
    assert asyncio.run(recognizer_on(sure, 8.0).recognize(pcm)).text == SENTENCE
    unsure = Scripted(whisper, SENTENCE, score=-3.0)
    assert asyncio.run(recognizer_on(unsure, 8.0).recognize(pcm)).text == "the whole window"
    off = Scripted(whisper, SENTENCE)
    assert asyncio.run(recognizer_on(off, 0.0).recognize(pcm)).text == "the whole window"
    assert off.frames == []  # context 0: the fitted window is never tried


def test_a_fitted_decoding_that_fails_is_asr_failed(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    model = Scripted(whisper, SENTENCE)
    model.error = RuntimeError("out of memory")
    with pytest.raises(RecognitionError) as failed:
        asyncio.run(recognizer_on(model, 8.0).recognize(silence(500)))
    assert failed.value.code == "asr_failed"
    assert str(failed.value) == "recognition failed: RuntimeError: out of memory"


def test_the_default_context_is_eight_seconds_and_reaches_the_shared_recognizer() -> None:
    assert ListeningConfig().asr_context_s == 8.0
    assert WhisperRecognizer()._context_s == 8.0
    from agent.listening.whisper import shared_whisper

    assert shared_whisper(ListeningConfig(asr_context_s=3.0))._context_s == 3.0


def test_the_decoder_is_greedy_english_without_timestamps_and_whispers_suppressions(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    model = Scripted(whisper, SENTENCE)
    fitted(model, utterance, RATE, 8.0)  # type: ignore[arg-type]
    tokenizer, prompt, suppressed = english_decoding(whisper)
    assert prompt == [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    [options] = model.options
    assert options == {
        "beam_size": 1,
        "max_length": len(prompt) + model.limits[0],
        "return_scores": True,
        "return_no_speech_prob": True,
        "suppress_blank": True,
        "suppress_tokens": suppressed,
    }


def test_a_reading_after_a_prompt_decodes_after_whispers_previous_text_and_as_many_tokens(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    """faster-whisper's ``initial_prompt``: the text said before, then the task's prompt."""
    tokenizer, prompt, _ = english_decoding(whisper)
    model = Scripted(whisper, SENTENCE)
    assert fitted(model, utterance, RATE, 8.0, before=" Hmm.  Mm-hmm. ") == SENTENCE  # type: ignore[arg-type]
    assert fitted(model, utterance, RATE, 8.0) == SENTENCE  # type: ignore[arg-type]
    assert model.prompts == [
        [tokenizer.sot_prev, *tokenizer.encode(" Hmm.  Mm-hmm."), *prompt],
        prompt,
    ]
    assert model.limits[0] == model.limits[1]  # the prompt takes none of the text's tokens


def test_a_timed_reading_decodes_with_timestamps_after_the_prompt_and_drops_them(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    """Another mode to check a reading by: without ``<|notimestamps|>``, one reading, greedy,
    its words whatever Whisper's doubts (here a score far under Whisper's bar)."""
    tokenizer, prompt, _ = english_decoding(whisper)
    model = Scripted(whisper, SENTENCE, score=-3.0)
    stamp = tokenizer.timestamp_begin
    model.tokens = [stamp, *model.tokens, stamp + 150]
    assert timed(model, utterance, RATE, 8.0, "Hmm. Mm-hmm.") == SENTENCE  # type: ignore[arg-type]
    assert model.prompts == [
        [tokenizer.sot_prev, *tokenizer.encode(" Hmm. Mm-hmm."), *tokenizer.sot_sequence]
    ]
    assert prompt == [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    assert model.batches == [1]  # one reading
    assert timed(model, utterance, RATE, 0.0, "Hmm.") is None  # type: ignore[arg-type]


WORDS = (  # varied: nothing to compress
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu apple banana "
    "cherry dragon"
)


@pytest.mark.parametrize(("short_by", "kept"), [(1, True), (0, False)])
def test_a_decoding_that_reaches_the_token_limit_is_doubted_and_one_under_it_is_not(
    whisper: WhisperModel, utterance: np.ndarray, short_by: int, kept: bool
) -> None:
    """Varied words, so the compression rule says nothing: only the count decides."""
    model = Scripted(whisper, WORDS)
    limit = max(MIN_TOKENS, int(np.ceil(utterance.size / RATE * TOKENS_PER_S)))
    model.tokens = model.tokens[: limit - short_by]
    text = english_decoding(whisper)[0].decode(model.tokens).strip()
    assert compression_ratio(text) < MAX_COMPRESSION
    assert (fitted(model, utterance, RATE, 8.0) == text) is kept  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ratio", "kept"), [(MAX_COMPRESSION, True), (MAX_COMPRESSION + 0.01, False)]
)
def test_a_reading_at_the_compression_limit_is_kept_and_one_over_it_is_not(
    whisper: WhisperModel,
    utterance: np.ndarray,
    monkeypatch: pytest.MonkeyPatch,
    ratio: float,
    kept: bool,
) -> None:
    monkeypatch.setattr(fitted_window, "compression_ratio", lambda _text: ratio)
    reading = fitted(Scripted(whisper, SENTENCE), utterance, RATE, 8.0)  # type: ignore[arg-type]
    assert (reading == SENTENCE) is kept


# --- readings at several phases (issue 49: the page hears as well as the model) -------------


def test_phases_are_read_in_one_batch_and_the_surest_reading_is_kept(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    model = Scripted(whisper, SENTENCE)
    model.scores = [-0.9, -0.3, -2.0, -0.5]  # the second reading is the surest
    features: list[np.ndarray] = []
    encode = model.encode
    model.encode = lambda batch: (features.append(batch), encode(batch))[1]  # type: ignore[method-assign]
    assert fitted(model, utterance, RATE, 8.0, phases=4) == SENTENCE  # type: ignore[arg-type]
    assert model.batches == [4] and features[0].shape[0] == 4
    # Each reading's audio is 5 ms (half a log-mel hop) later than the one before it: the
    # features differ, and the window is the same for all.
    assert len({f.tobytes() for f in features[0]}) == 4
    model.scores = [-1.5, -2.0, -1.2, -3.0]  # none sure: the whole window decides
    assert fitted(model, utterance, RATE, 8.0, phases=4) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("no_speech", "text", "kept"),
    [(0.6, SENTENCE, True), (0.61, SENTENCE, False), (0.0, ".", False)],
)
def test_a_reading_that_may_have_heard_nobody_is_doubted(
    whisper: WhisperModel, utterance: np.ndarray, no_speech: float, text: str, kept: bool
) -> None:
    model = Scripted(whisper, text)
    model.no_speech = no_speech
    assert (fitted(model, utterance, RATE, 8.0) is not None) is kept  # type: ignore[arg-type]


def test_the_projects_speech_and_silence_at_four_phases(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    text = fitted(whisper, utterance, RATE, 8.0, phases=4)
    assert text is not None and word_error_rate(SENTENCE, text) <= 0.2, text
    assert not fitted(whisper, pcm16_to_float(silence(1500)), RATE, 8.0, phases=4)


def test_the_default_is_four_phases_and_reaches_the_shared_recognizer() -> None:
    from agent.listening.whisper import shared_whisper

    assert ListeningConfig().asr_phases == 4 and WhisperRecognizer()._phases == 4
    assert shared_whisper(ListeningConfig(asr_phases=2))._phases == 2


# --- more readings only where the first are unsure (docs/listening.md) ---------------------


# Scripted readings of two tokens each: faster-whisper's average counts the end of text, so
# a reading scored -0.6 averages -0.4 (a mean token probability of 0.67) and -0.5, -0.33 (0.72).


def test_a_sure_first_reading_is_not_read_again(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    model = Scripted(whisper, SENTENCE, score=-0.2)  # mean token probability about 0.83
    text = fitted(model, utterance, RATE, 8.0, phases=4, first=1, sure=0.7)  # type: ignore[arg-type]
    assert text == SENTENCE
    assert model.batches == [1]
    # Read at the first phase: the audio as it is, no delay.
    frames = window_frames(utterance.size + 240, RATE, 8.0)
    assert frames is not None
    assert np.array_equal(
        model.encoded[0][0], fitted_window.window_features(whisper, utterance, frames)
    )


def test_an_unsure_first_reading_reads_the_other_phases_in_one_batch_and_keeps_the_surest(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    model = Scripted(whisper, SENTENCE)
    model.answers = [
        ("reading one", -0.6),
        ("reading two", -0.9),
        ("reading three", -0.3),
        ("reading four", -0.45),
    ]
    text = fitted(model, utterance, RATE, 8.0, phases=4, first=1, sure=0.7)  # type: ignore[arg-type]
    assert text == "reading three"
    assert model.batches == [1, 3]
    # The second batch is the three other phases, 5, 10 and 15 ms late, on the same window.
    frames = window_frames(utterance.size + 240, RATE, 8.0)
    assert [batch.shape for batch in model.encoded] == [(1, 80, frames), (3, 80, frames)]
    firsts = {f.tobytes() for f in model.encoded[0]}
    assert len(firsts | {f.tobytes() for f in model.encoded[1]}) == 4


def test_the_first_reading_stays_when_it_is_still_the_surest(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    model = Scripted(whisper, SENTENCE)
    model.answers = [
        ("reading one", -0.6),
        ("reading two", -0.9),
        ("reading three", -0.7),
        ("reading four", -0.8),
    ]
    text = fitted(model, utterance, RATE, 8.0, phases=4, first=1, sure=0.7)  # type: ignore[arg-type]
    assert (text, model.batches) == ("reading one", [1, 3])
    model.answers = [("reading one", -0.5)]  # averages -0.33: sure at 0.7, read once
    text = fitted(model, utterance, RATE, 8.0, phases=4, first=1, sure=0.7)  # type: ignore[arg-type]
    assert (text, model.batches) == ("reading one", [1, 3, 1])


@pytest.mark.parametrize(
    ("score", "sure", "read_again"),
    [
        (-0.35, 0.7, False),  # exp(-0.35) = 0.705: over the bar
        (-0.35, float(np.exp(-0.35)), False),  # at it: sure
        (-0.36, 0.7, True),  # 0.698: under it
        (-0.99, 0.0, False),  # no bar: any reading Whisper keeps
        (-0.02, 0.99, True),  # 0.980
    ],
)
def test_the_bar_is_the_mean_token_probability_of_the_first_reading(
    score: float, sure: float, read_again: bool
) -> None:
    assert settled([(score, "a reading")], sure) is not read_again
    assert settled([None], sure) is False  # one Whisper doubts is unsure at any bar


@pytest.mark.parametrize(
    ("texts", "agree"),
    [
        (("Tell me about sea otters.", "tell me about sea otters"), True),  # case, marks
        (("Tell me about sea otters.", "Tell me about the otters."), False),
        (("It's ten.", "Its ten."), False),
    ],
)
def test_first_readings_are_settled_only_where_they_read_the_same_words(
    texts: tuple[str, str], agree: bool
) -> None:
    assert settled([(-0.2, texts[0]), (-0.3, texts[1])], 0.5) is agree
    assert settled([(-0.2, texts[0]), None], 0.0) is False


@pytest.mark.parametrize(("second", "batches"), [("hello, there", [2]), ("hello their", [2, 2])])
def test_two_first_readings_that_disagree_read_the_other_two(
    whisper: WhisperModel, utterance: np.ndarray, second: str, batches: list[int]
) -> None:
    model = Scripted(whisper, SENTENCE)
    model.answers = [("Hello there.", -0.2), (second, -0.1), ("one", -0.9), ("two", -0.8)]
    text = fitted(model, utterance, RATE, 8.0, phases=4, first=2, sure=0.0)  # type: ignore[arg-type]
    assert model.batches == batches
    assert text == second  # the surest of those read


def test_a_first_reading_whisper_doubts_reads_the_others_and_none_sure_is_the_whole_window(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    model = Scripted(whisper, SENTENCE, score=-1.5)
    assert fitted(model, utterance, RATE, 8.0, phases=4, first=1, sure=0.0) is None  # type: ignore[arg-type]
    assert model.batches == [1, 3]


def test_the_projects_speech_and_silence_by_the_default_rule(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    config = ListeningConfig()
    rule = {"phases": config.asr_phases, "first": config.asr_first, "sure": config.asr_sure}
    text = fitted(whisper, utterance, RATE, 8.0, **rule)
    assert text is not None and word_error_rate(SENTENCE, text) <= 0.2, text
    assert not fitted(whisper, pcm16_to_float(silence(1500)), RATE, 8.0, **rule)


def test_the_rules_settings_reach_the_shared_recognizer() -> None:
    from agent.listening.whisper import shared_whisper

    defaults = ListeningConfig()
    assert (defaults.asr_phases, defaults.asr_first, defaults.asr_sure) == (4, 2, 0.0)
    recognizer = WhisperRecognizer()
    assert (recognizer._first, recognizer._sure) == (defaults.asr_first, defaults.asr_sure)
    shared = shared_whisper(ListeningConfig(asr_first=3, asr_sure=0.5))
    assert (shared._first, shared._sure) == (3, 0.5)


# --- a reading that loops loses to one that does not (docs/listening.md) ----------------------

# tiny.en's readings of the Scottish voice's "Hey, who wrote the first computer program?" at
# four phases (docs/benchmarks/asr_readings.json, 26 ms lead, 96 ms tail): the loop was the
# surest, and its compression ratio (1.74) is far under Whisper's limit.
LOOP = "Hey, we're all to the first computer, we're all to the first computer, we're all"
SCOTTISH = [
    (LOOP, -0.412),
    ("Hey, we're all to the first computer for all, run.", -0.56),
    ("Hey, we're all to the first computer program.", -0.547),
    ("Hey, we're all to the first computer problem.", -0.479),
]


@pytest.mark.parametrize(
    "text",
    [
        LOOP,
        "Hey, we're all to the first computer, we're all to the first computer, we're all to",
        "the the the the the the",
        "Hey, I'm your host, and I'm your host, and I'm your host.",
        "I've never met him before, I've never met him before.",
        "I'll win the last long Chicago to win the half, I'll win the last long Chicago to win "
        "the half, I'll win the last half.",
    ],
)
def test_a_decoder_that_repeats_itself_loops(text: str) -> None:
    """Readings tiny.en and base gave on the project's benchmarks (asr_readings, asr_voices);
    none compresses past Whisper's limit."""
    assert loops(text)
    assert compression_ratio(text) < MAX_COMPRESSION


@pytest.mark.parametrize(
    "text",
    [
        SENTENCE,
        "My number is five five five one two three four.",  # three alike: a number
        "visit w w w dot example dot com slash help today",
        "Ah, I'm even with lots of work, I'm doomed, let's hop hop hop, too!",
        "No, no, no, no.",  # three said again: under LOOP_WORDS
        "Book a table for for at a Italian restaurant in the a comment garden.",
        "We might meet at 30,000,000,000,000,000 on the 20th of August.",  # one word
        "Thank you, thank you.",
        "I think that I think",  # a part said again, not a whole copy
    ],
)
def test_speech_that_says_a_few_words_again_does_not_loop(text: str) -> None:
    assert not loops(text)
    assert collapsed(text) == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (LOOP, "Hey, we're all to the first computer"),  # the broken-off copy goes too
        ("the the the the the the.", "the"),
        (
            "I'm not sure, I'm not sure, I'm sure that I will be back in 15 minutes.",
            "I'm not sure, I'm sure that I will be back in 15 minutes.",
        ),
        ("Go on, go on, go on. Stop, stop, stop, stop, stop.", "Go on, Stop"),  # two loops
    ],
)
def test_a_loop_collapses_to_its_first_copy(text: str, kept: str) -> None:
    assert collapsed(text) == kept
    assert not loops(kept)


def test_the_surest_reading_that_does_not_loop_is_kept() -> None:
    readings = [(score, text) for text, score in SCOTTISH]
    assert max(readings)[1] == LOOP  # the surest by log-probability alone
    assert surest(readings) == "Hey, we're all to the first computer problem."
    loops_only = [(-0.43, LOOP), (-0.2, "the the the the the the")]
    assert surest(loops_only) == "the"  # where all loop: the surest, collapsed


def test_four_phases_keep_a_reading_that_does_not_loop_over_a_surer_loop(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    model = Scripted(whisper, SENTENCE)
    model.answers = [(text, score) for text, score in SCOTTISH]
    text = fitted(model, utterance, RATE, 8.0, phases=4, first=2, sure=0.0)  # type: ignore[arg-type]
    assert text == "Hey, we're all to the first computer problem."
    model.answers = [(LOOP, -0.41), (LOOP, -0.45), (LOOP, -0.6), (LOOP, -0.7)]
    text = fitted(model, utterance, RATE, 8.0, phases=4)  # type: ignore[arg-type]
    assert text == "Hey, we're all to the first computer"  # all loop: collapsed


def test_first_readings_that_agree_on_a_loop_read_the_other_phases(
    whisper: WhisperModel, utterance: np.ndarray
) -> None:
    assert settled([(-0.4, LOOP), (-0.5, LOOP.lower())], 0.0) is False
    model = Scripted(whisper, SENTENCE)
    model.answers = [(LOOP, -0.41), (LOOP, -0.45), *[(text, s) for text, s in SCOTTISH[2:]]]
    text = fitted(model, utterance, RATE, 8.0, phases=4, first=2, sure=0.0)  # type: ignore[arg-type]
    assert model.batches == [2, 2]
    assert text == "Hey, we're all to the first computer problem."
