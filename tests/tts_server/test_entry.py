"""``tts_server.entry.quiet``: whether a stop while the server still imports says its line,
decided before the settings are parsed, as the settings will decide the banner."""

from __future__ import annotations

import pytest

from tts_server.entry import quiet
from tts_server.settings import parse_settings


@pytest.mark.parametrize(
    ("argv", "env", "off"),
    [
        ([], {}, False),
        (["--no-banner"], {}, True),
        (["--port", "9", "--no-banner", "--banner"], {}, False),  # the last flag wins
        ([], {"TTS_BANNER": "0"}, True),
        ([], {"TTS_BANNER": " Off "}, True),  # the settings' rule: case and spaces
        ([], {"TTS_BANNER": "yes"}, False),
        ([], {"TTS_BANNER": ""}, False),  # empty: unset
        (["--banner"], {"TTS_BANNER": "0"}, False),  # a flag wins over the variable
        (["--no-banner"], {"TTS_BANNER": "1"}, True),
    ],
)
def test_the_banner_is_off_by_flag_or_variable_as_the_settings_read_them(
    argv: list[str], env: dict[str, str], off: bool
) -> None:
    assert quiet(argv, env) is off
    assert parse_settings(argv, env).banner is not off


def test_a_variable_the_settings_refuse_leaves_the_line_on() -> None:
    """The settings say why once parsed; the stop before that still says its line."""
    assert quiet([], {"TTS_BANNER": "maybe"}) is False
    with pytest.raises(SystemExit, match="TTS_BANNER='maybe' is not a boolean"):
        parse_settings([], {"TTS_BANNER": "maybe"})


@pytest.mark.parametrize("flag", ["--no-ban", "--no-b", "--ban"])
def test_an_abbreviated_banner_flag_is_refused_so_the_early_check_cannot_miss_it(
    flag: str,
) -> None:
    """``quiet`` sees only full names; the parser, which would take a prefix, refuses one."""
    assert quiet([flag], {}) is False
    with pytest.raises(SystemExit):
        parse_settings([flag], {})
