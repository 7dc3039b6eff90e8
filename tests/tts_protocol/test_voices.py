"""OpenAI's voice names mapped to the nearest voice a server has: same gender, then English."""

from __future__ import annotations

import pytest

from tts_protocol import parse_voice, voice_name
from tts_protocol.voices import OPENAI_VOICES, nearest_voice, openai_voice_map, resolve_voice

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


def test_openai_names_match_the_whole_name_after_the_language_and_gender() -> None:
    # "af_new_alloy" is not "alloy": only the part after the first underscore is the name
    mapping = openai_voice_map(("af_heart", "af_new_alloy", "custom"), "af_heart")
    assert mapping["alloy"] == "af_heart"
    assert openai_voice_map(("custom", "af_alloy"), "custom")["alloy"] == "af_alloy"


def test_a_voice_with_no_kokoro_name_is_ranked_last_for_either_gender() -> None:
    assert nearest_voice(("custom", "jm_kumo"), "custom", "f") == "custom"  # no f: the default
    assert nearest_voice(("custom", "jf_alpha"), "jm_kumo", "f") == "jf_alpha"


def test_resolving_maps_only_the_openai_names_the_server_lacks() -> None:
    assert resolve_voice(parse_voice("nova"), ENGLISH, "af_heart") == (("af_heart", 1.0),)
    assert resolve_voice(parse_voice("onyx"), ENGLISH, "af_heart") == (("am_onyx", 1.0),)
    assert resolve_voice(parse_voice("nobody"), ENGLISH, "af_heart") == (("nobody", 1.0),)
    assert resolve_voice(parse_voice("nova"), ("nova", "af_heart"), "af_heart") == (("nova", 1.0),)


def test_resolving_a_blend_maps_each_name_and_adds_up_those_that_meet() -> None:
    mix = resolve_voice(parse_voice("nova(3)+shimmer(1)+am_adam(4)"), ENGLISH, "af_heart")
    assert voice_name(mix) == "af_heart(0.5)+am_adam(0.5)"
