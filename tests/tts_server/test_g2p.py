"""English G2P and model-sized phoneme chunking."""

from __future__ import annotations

import pytest

from tts_server.engines import Engine
from tts_server.g2p import MAX_PHONEMES, split_phonemes


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
