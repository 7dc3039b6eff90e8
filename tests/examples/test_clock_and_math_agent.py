"""The example agent's tools (``examples/clock_and_math_agent.py``): offline, and the arithmetic
safe (an ``ast`` walk that allows numbers and operators, never ``eval``)."""

from __future__ import annotations

import pytest

from agent.core.factory import VoiceFactory
from examples.clock_and_math_agent import convert, create_agent, evaluate, time_in, zone_of


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("12.5 * (3 + 4)", 87.5),
        ("2 ^ 10", 1024),
        ("-3 + +2", -1),
        ("7 // 2 + 7 % 2", 4),
        ("sqrt(16) + abs(-2)", 6),
        ("round(pi, 2)", 3.14),
    ],
)
def test_arithmetic(expression: str, value: float) -> None:
    assert evaluate(expression) == pytest.approx(value)


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("__import__('os').system('true')", "is not allowed"),
        ("(1).real", "is not allowed"),
        ("x + 1", "is not allowed"),
        ("True + 1", "is not allowed"),
        ("'a' * 3", "is not allowed"),
        ("9 ** 9 ** 9", "an exponent over 1000"),
        ("1 / 0", "division by zero"),
        ("10.0 ** 999", "1"),  # OverflowError, as a ValueError
        ("2 +", "is not arithmetic"),
        ("1" * 201, "over 200 characters"),
    ],
)
def test_anything_else_is_refused_with_a_value_error(expression: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        evaluate(expression)


@pytest.mark.parametrize(
    ("value", "source", "target", "result"),
    [
        (5, "miles", "km", 8.04672),
        (3, "feet", "inches", 36),
        (1, "lb", "g", 453.59237),
        (2, "gallons", "l", 7.570823568),
        (100, "km/h", "mph", 62.1371192),
        (212, "Fahrenheit", "Celsius", 100),
        (0, "°C", "K", 273.15),
    ],
)
def test_units(value: float, source: str, target: str, result: float) -> None:
    assert convert(value, source, target) == pytest.approx(result)


def test_units_of_different_quantities_or_unknown_are_refused() -> None:
    with pytest.raises(ValueError, match="cannot convert kg to km"):
        convert(1, "kg", "km")
    with pytest.raises(ValueError, match="I do not know the unit 'parsec'"):
        convert(1, "parsec", "km")


def test_the_time_in_a_city() -> None:
    assert str(zone_of("Tokyo")) == "Asia/Tokyo"
    assert str(zone_of("san  Francisco")) == "America/Los_Angeles"
    assert str(zone_of("New York")) == "America/New_York"
    assert time_in._tool_func("Paris").endswith(" in Paris")
    with pytest.raises(ValueError, match="I do not know the time zone of 'Atlantis'"):
        zone_of("Atlantis")


def test_the_example_is_an_agent_factory_with_its_tools() -> None:
    agent = VoiceFactory.check("examples.clock_and_math_agent:create_agent")("c1")
    assert agent.tool_names == ["time_in", "calculate", "convert_units"]
    assert create_agent() is not create_agent()
