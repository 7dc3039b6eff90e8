"""The units table (``tts_server/normalize/units.py``), built once when the module is
imported: a symbol's singular and plural, their underscores said as spaces.

The mutation run's normalize group lists this file first: mutmut charges what runs at import
(building this table) to the first test of the session alone, so that one test reads it all.
"""

from __future__ import annotations

from tts_server.normalize.units import SPACED, UNITS


def test_every_unit_is_said_in_words_singular_and_plural() -> None:
    assert all(word and "_" not in word for pair in UNITS.values() for word in pair)
    assert {symbol: UNITS[symbol] for symbol in ("mm", "ft", "mph", "°C", "ha")} == {
        "mm": ("millimeter", "millimeters"),  # the first entry
        "ft": ("foot", "feet"),
        "mph": ("mile per hour", "miles per hour"),
        "°C": ("degree Celsius", "degrees Celsius"),
        "ha": ("hectare", "hectares"),  # the last
    }


def test_a_unit_that_is_also_a_word_or_a_letter_never_stands_alone() -> None:
    assert {"in", "A", "s"}.isdisjoint(SPACED)
    assert {"km", "mph", "GB"} <= SPACED
