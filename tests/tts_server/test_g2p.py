"""English G2P, the phoneme table in front of it, and model-sized phoneme chunking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tts_server import engines
from tts_server.engines import Engine, EngineError, load_g2p
from tts_server.engines.g2p import (
    MAX_PHONEMES,
    BadPhonemeTable,
    G2PUnavailable,
    NotInTable,
    PhonemeTable,
    check_speakable,
    split_spans,
    split_text,
)
from tts_server.engines.prepared import UnsupportedText
from tts_server.settings import Settings
from tts_server.testing.fake_engine import FakeEngine


@pytest.fixture(scope="module")
def phonemes(engine: Engine) -> str:
    return engine._g2p("Dr. Smith paid $3.50 at 5 p.m. for 12 apples, then left.")


def test_g2p_speaks_numbers_money_and_abbreviations(phonemes: str) -> None:
    assert "dˈɑktəɹ" in phonemes  # Dr.
    assert "dˈɑləɹz" in phonemes and "sˈɛnts" in phonemes  # $3.50
    assert "twˈɛlv" in phonemes  # 12
    assert phonemes.endswith(".")


def test_g2p_falls_back_to_espeak_for_unknown_words(engine: Engine) -> None:
    assert engine._g2p("Zorblatt").strip()


def split_phonemes(phonemes: str, limit: int = MAX_PHONEMES) -> list[str]:
    """The pieces ``split_spans`` cuts, as text."""
    return [phonemes[start:end] for start, end in split_spans(phonemes, limit)]


def test_short_phonemes_are_one_piece() -> None:
    assert split_phonemes("həlˈO wˈɜɹld.") == ["həlˈO wˈɜɹld."]
    assert split_phonemes("   ") == []


def test_each_sentence_is_its_own_piece() -> None:
    sentence = "ðə kwˈɪk bɹˈWn fˈɑks ʤˈʌmps ˌOvəɹ ðə lˈAzi dˈɔɡ"
    text = f"{sentence}. {sentence}! {sentence}? {sentence}…  {sentence}"
    pieces = split_phonemes(text)
    assert pieces == [f"{sentence}.", f"{sentence}!", f"{sentence}?", f"{sentence}…", sentence]


def test_an_over_long_sentence_is_cut_below_the_limit_never_mid_word() -> None:
    text = " ".join(["ðə kwˈɪk bɹˈWn fˈɑks ʤˈʌmps"] * 40) + "."
    pieces = split_phonemes(text)
    assert len(pieces) > 1
    assert all(len(p) <= MAX_PHONEMES for p in pieces)
    assert " ".join(pieces).split() == text.split()


def test_clause_marks_are_used_when_no_sentence_end_fits() -> None:
    text = ", ".join(["wˈʌn tˈu θɹˈi"] * 60)
    pieces = split_phonemes(text, limit=100)
    assert all(len(p) <= 100 and p.endswith(",") for p in pieces[:-1])
    assert " ".join(pieces).split() == text.split()


def test_only_a_word_longer_than_the_limit_is_hard_cut() -> None:
    assert split_phonemes("ab " + "x" * 12, limit=5) == ["ab", "xxxxx", "xxxxx", "xx"]


# -- the phoneme table -------------------------------------------------------------------------


def test_the_table_answers_before_g2p_and_g2p_answers_the_rest(engine: Engine) -> None:
    table = PhonemeTable({" Hello there. ": "TABLE"}, engine._g2p)
    assert len(table) == 1
    assert table("Hello there.") == "TABLE"  # matched without the surrounding spaces
    assert table("Good morning.") == engine._g2p("Good morning.")


def test_without_g2p_a_text_outside_the_table_is_a_typed_error() -> None:
    table = PhonemeTable({"Hello there.": "həlˈO ðˈɛɹ."}, None)
    assert table("Hello there.") == "həlˈO ðˈɛɹ."
    with pytest.raises(NotInTable, match="not in the table"):
        table("Something else.")


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "cannot read"), ('["a", "b"]', "JSON object"), ('{"a": 1}', "JSON object")],
)
def test_a_bad_table_file_is_refused(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "table.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(BadPhonemeTable, match=message):
        PhonemeTable.load(path, None)
    with pytest.raises(BadPhonemeTable, match="cannot read"):
        PhonemeTable.load(tmp_path / "missing.json", None)


def test_with_a_table_the_engine_loads_without_spacy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"Hi.": "hˈI."}), encoding="utf-8")

    def no_spacy() -> None:
        raise G2PUnavailable("no spaCy English pipeline is installed")

    monkeypatch.setattr(engines, "EnglishG2P", no_spacy)
    with pytest.raises(EngineError, match="no spaCy"):
        load_g2p(Settings())
    g2p = load_g2p(Settings(phoneme_table=path))
    assert g2p("Hi.") == "hˈI."
    with pytest.raises(NotInTable):
        g2p("Not in it.")


def test_a_bad_table_setting_fails_the_load(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="cannot read phoneme table"):
        load_g2p(Settings(phoneme_table=tmp_path / "missing.json"))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("東京 is big.", "CJK letters (東京)"),
        ("Привет, друг.", "Cyrillic letters (Приветду…)"),
        ("Say ελλάδα and こんにちは.", "Greek, Hiragana letters"),
        ("あいうえおかきくけこ", "(あいうえおかきく…)"),
    ],
)
def test_letters_the_english_g2p_would_spell_out_are_refused_by_script(
    text: str, says: str
) -> None:
    """eSpeak reads 東 as "Japanese letter ..." and Cyrillic letter by letter: never spoken."""
    with pytest.raises(UnsupportedText) as caught:
        check_speakable(text)
    assert says in str(caught.value) and "only Latin-script text" in str(caught.value)


@pytest.mark.parametrize(
    "text", ["Café, naïve façade; Straße, Ærø.", "3.50 $ 100% — ok?!", "Don\u02bct 🙂 worry."]
)
def test_latin_text_digits_symbols_and_modifier_letters_pass(text: str) -> None:
    check_speakable(text)


UNPUNCTUATED = " ".join(["the quick brown fox jumps over the lazy dog"] * 100)[:4096]


def test_a_short_text_is_phonemized_whole() -> None:
    text = "Dr. Smith paid $3.50. Then he left, quickly."  # 45 chars: one G2P call
    assert split_text(text) == [text]


def test_a_long_unpunctuated_text_is_cut_at_spaces_short_first_then_growing() -> None:
    pieces = split_text(UNPUNCTUATED)
    assert len(UNPUNCTUATED) == 4096
    limits = [100, 150, 225] + [300] * (len(pieces) - 3)  # each at most 1.5 times the last
    assert all(limit - 50 < len(p) <= limit for p, limit in zip(pieces[:-1], limits, strict=False))
    assert " ".join(pieces).split() == UNPUNCTUATED.split()  # every word, none cut


def test_a_long_text_is_cut_after_sentences_then_at_clause_marks() -> None:
    clause = "a clause that goes on for a while about rivers and hills"  # 56 chars
    text = f"Short one. {', '.join([clause] * 8)}. End."
    pieces = split_text(text)
    assert pieces[0] == "Short one." and pieces[-1] == "End."
    assert pieces[1] == ", ".join([clause] * 2) + ","  # the last comma within 150 chars
    assert pieces[2] == ", ".join([clause] * 3) + ","  # then within 225
    assert " ".join(pieces).split() == text.split()


async def test_the_first_chunk_comes_before_the_whole_text_is_phonemized() -> None:
    """Lazy G2P: the first piece is phonemized and spoken before the rest reaches the G2P."""
    engine = FakeEngine()
    seen: list[str] = []

    def counting(text: str) -> str:
        seen.append(text)
        return text

    engine._g2p = counting
    try:
        chunks = engine.synthesize(engine.prepare(UNPUNCTUATED))
        await anext(chunks)
        assert len(seen) == 1 and len(seen[0]) <= 100 and UNPUNCTUATED.startswith(seen[0])
        rest = [chunk async for chunk in chunks]
        assert len(seen) == 1 + len(rest) and " ".join(seen).split() == UNPUNCTUATED.split()
    finally:
        engine.close()
