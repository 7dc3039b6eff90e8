"""The house's bars (``docs/architecture.md``): no function over 60 lines anywhere in the
packages, bench's report writers included; no class over 200 lines or 15 methods where the turn
and the client live (``agent/leg``, ``tts_client``)."""

from __future__ import annotations

import pytest

from devtools.house_sizes import CLASS_LINES_BAR, CLASS_METHODS_BAR, FUNCTION_BAR, House, measure

HELD_TO_THE_CLASS_BARS = ("agent/leg/", "tts_client/")


@pytest.fixture(scope="module")
def house() -> House:
    return measure()


def test_no_function_is_over_the_bar(house: House) -> None:
    long = [f"{f.path} {f.name} ({f.lines})" for f in house.long_functions(FUNCTION_BAR)]
    assert not long, long


def test_no_class_of_the_leg_or_the_client_is_over_the_bars(house: House) -> None:
    big = [
        f"{c.path} {c.name} ({c.lines} lines, {c.methods} methods)"
        for c in house.big_classes()
        if c.path.startswith(HELD_TO_THE_CLASS_BARS)
    ]
    assert not big, (CLASS_LINES_BAR, CLASS_METHODS_BAR, big)
