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
    split_spans,
)
from tts_server.settings import Settings


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
