"""OpenAI's voice names mapped to the nearest voice an engine has: same gender, then English."""

from __future__ import annotations

import pytest

from tts_server.openai_api.speech_request import OPENAI_VOICES, nearest_voice, openai_voice_map

LOCAL = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")  # the embedded pack
ENGLISH = ("af_alloy", "af_heart", "am_adam", "am_onyx", "bf_emma", "bm_fable", "bm_george")
MALE = ("ash", "ballad", "cedar", "echo", "fable", "onyx", "verse")
FEMALE = ("alloy", "coral", "marin", "nova", "sage", "shimmer")


def test_every_openai_name_has_a_gender() -> None:
    assert sorted(MALE + FEMALE) == sorted(OPENAI_VOICES)


@pytest.mark.parametrize("name", MALE)
def test_local_voices_give_the_male_names_the_male_voice(name: str) -> None:
    assert openai_voice_map(LOCAL, "jf_alpha")[name] == "jm_kumo"


@pytest.mark.parametrize("name", FEMALE)
def test_local_voices_give_the_female_names_the_default_female_voice(name: str) -> None:
    assert openai_voice_map(LOCAL, "jf_alpha")[name] == "jf_alpha"


def test_english_voices_map_by_name_then_gender_american_first() -> None:
    mapping = openai_voice_map(ENGLISH, "af_heart")
    assert (mapping["alloy"], mapping["onyx"], mapping["fable"]) == (
        "af_alloy",
        "am_onyx",
        "bm_fable",
    )
    assert mapping["nova"] == "af_heart"  # no af_nova: the default, female and American
    assert mapping["echo"] == "am_adam"  # no am_echo: male and American before British


def test_english_comes_before_the_default_when_the_gender_matches() -> None:
    voices = ("bm_george", "jf_alpha", "jm_kumo")
    assert nearest_voice(voices, "jf_alpha", "m") == "bm_george"
    assert nearest_voice(voices, "jf_alpha", "f") == "jf_alpha"


def test_without_the_gender_english_then_the_default() -> None:
    assert nearest_voice(("af_heart", "jf_alpha"), "jf_alpha", "m") == "af_heart"
    assert nearest_voice(("custom", "jf_alpha"), "custom", "m") == "custom"
    assert nearest_voice(("custom", "other"), "other", "m") == "other"
