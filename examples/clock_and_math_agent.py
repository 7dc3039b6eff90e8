"""An agent with real offline tools, to voice: the time in a city, arithmetic, unit conversion.

    VOICE_AGENT_MODEL=bedrock:us.anthropic.claude-haiku-4-5-20251001-v1:0 \\
        voice-agent dev --agent examples.clock_and_math_agent:create_agent

Any model spec works (``--model``, ``VOICE_AGENT_MODEL``; docs/agent.md, "Models"); the
default, the offline demo model, cannot call tools. The tools need no network: the time zones
come from ``zoneinfo`` (the system's database or the ``tzdata`` wheel), the arithmetic from an
``ast`` walk that allows numbers and operators only (no ``eval``), the units from a table.
"""

from __future__ import annotations

import ast
import math
import operator
import zoneinfo
from collections.abc import Callable
from datetime import datetime

from strands import Agent, tool

from agent.core.llm import make_model

SYSTEM_PROMPT = (
    "You are a helpful assistant that knows the time anywhere, does arithmetic and converts "
    "units. Use your tools for these, never guess, and say numbers as a person would."
)

# --- the time in a city ---------------------------------------------------------------------

CITY_ZONES = {  # cities whose zone is not named after them
    "san francisco": "America/Los_Angeles",
    "seattle": "America/Los_Angeles",
    "boston": "America/New_York",
    "washington": "America/New_York",
    "beijing": "Asia/Shanghai",
    "mumbai": "Asia/Kolkata",
    "delhi": "Asia/Kolkata",
    "osaka": "Asia/Tokyo",
    "kyoto": "Asia/Tokyo",
    "munich": "Europe/Berlin",
    "barcelona": "Europe/Madrid",
    "milan": "Europe/Rome",
    "geneva": "Europe/Zurich",
    "beirut": "Asia/Beirut",
}


def zone_of(city: str) -> zoneinfo.ZoneInfo:
    """The time zone of ``city``: the table above, else a zone named after it."""
    key = " ".join(city.lower().split())
    if key in CITY_ZONES:
        return zoneinfo.ZoneInfo(CITY_ZONES[key])
    wanted = key.replace(" ", "_")
    for name in sorted(zoneinfo.available_timezones()):
        if name.rpartition("/")[2].lower() == wanted:
            return zoneinfo.ZoneInfo(name)
    raise ValueError(f"I do not know the time zone of {city!r}")


@tool
def time_in(city: str) -> str:
    """The local date and time in a city, e.g. Tokyo, Paris or San Francisco."""
    now = datetime.now(zone_of(city))
    return f"{now:%A %d %B %Y}, {now:%H:%M} ({now.tzname()}) in {city}"


# --- arithmetic --------------------------------------------------------------------------------

OPERATORS: dict[type[ast.AST], Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
FUNCTIONS: dict[str, Callable[..., float]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "log": math.log,
    "sin": math.sin,
    "cos": math.cos,
}
CONSTANTS = {"pi": math.pi, "e": math.e}
MAX_EXPONENT = 1000  # 10 ** 1000 is fine; 9 ** 9 ** 9 would not end
MAX_CHARS = 200


def evaluate(expression: str) -> float:
    """The value of an arithmetic ``expression``: numbers, + - * / // % **, parentheses, and
    ``FUNCTIONS`` and ``CONSTANTS``; ``ValueError`` for anything else."""
    if len(expression) > MAX_CHARS:
        raise ValueError(f"the expression is over {MAX_CHARS} characters")
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"{expression!r} is not arithmetic") from exc
    try:
        return _value(tree.body)
    except (ArithmeticError, TypeError) as exc:  # 1 / 0, 10.0 ** 999, sqrt(1, 2)
        raise ValueError(f"{expression}: {exc}") from exc


def _value(node: ast.AST) -> float:
    match node:
        case ast.Constant(value=int() | float() as number) if not isinstance(number, bool):
            return number
        case ast.Name(id=name) if name in CONSTANTS:
            return CONSTANTS[name]
        case ast.UnaryOp(op=op, operand=operand) if type(op) in OPERATORS:
            return OPERATORS[type(op)](_value(operand))
        case ast.BinOp(left=left, op=op, right=right) if type(op) in OPERATORS:
            a, b = _value(left), _value(right)
            if isinstance(op, ast.Pow) and abs(b) > MAX_EXPONENT:
                raise ValueError(f"an exponent over {MAX_EXPONENT}")
            return OPERATORS[type(op)](a, b)
        case ast.Call(func=ast.Name(id=name), args=args, keywords=[]) if name in FUNCTIONS:
            return FUNCTIONS[name](*(_value(arg) for arg in args))
    raise ValueError(f"{ast.unparse(node)!r} is not allowed (numbers and operators only)")


@tool
def calculate(expression: str) -> str:
    """Work out an arithmetic expression, e.g. '12.5 * (3 + 4)' or 'sqrt(2) / 3'."""
    value = evaluate(expression)
    return f"{expression} = {value:.10g}"


# --- units -------------------------------------------------------------------------------------

UNITS: dict[str, tuple[str, float]] = {  # unit: (quantity, its size in the SI unit)
    "m": ("length", 1.0),
    "km": ("length", 1000.0),
    "cm": ("length", 0.01),
    "mm": ("length", 0.001),
    "mi": ("length", 1609.344),
    "yd": ("length", 0.9144),
    "ft": ("length", 0.3048),
    "in": ("length", 0.0254),
    "kg": ("mass", 1.0),
    "g": ("mass", 0.001),
    "lb": ("mass", 0.45359237),
    "oz": ("mass", 0.028349523125),
    "l": ("volume", 1.0),
    "ml": ("volume", 0.001),
    "gal": ("volume", 3.785411784),  # US
    "cup": ("volume", 0.2365882365),  # US
    "m/s": ("speed", 1.0),
    "km/h": ("speed", 1 / 3.6),
    "mph": ("speed", 0.44704),
    "kn": ("speed", 1852 / 3600),
}
ALIASES = {
    "meter": "m", "metre": "m", "kilometer": "km", "kilometre": "km", "centimeter": "cm",
    "millimeter": "mm", "mile": "mi", "yard": "yd", "foot": "ft", "feet": "ft", "inch": "in",
    "inches": "in", "kilogram": "kg", "gram": "g", "pound": "lb", "ounce": "oz", "liter": "l",
    "litre": "l", "milliliter": "ml", "gallon": "gal", "knot": "kn", "kph": "km/h",
}  # fmt: skip
TEMPERATURES = {"c": (1.0, 0.0), "k": (1.0, -273.15), "f": (5 / 9, -32 * 5 / 9)}  # to °C
TEMPERATURE_NAMES = {"celsius": "c", "kelvin": "k", "fahrenheit": "f"}


def unit_of(name: str) -> str:
    """``name`` as a key of ``UNITS`` or ``TEMPERATURES``: 'Miles' is 'mi'."""
    key = name.strip().lower().removeprefix("°").removeprefix("degrees ")
    key = TEMPERATURE_NAMES.get(key, key)
    if key in UNITS or key in TEMPERATURES:
        return key
    singular = key.removesuffix("es") if key.endswith("ches") else key.removesuffix("s")
    if (key := ALIASES.get(key, ALIASES.get(singular, singular))) in UNITS:
        return key
    raise ValueError(f"I do not know the unit {name!r}")


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` in ``from_unit``, in ``to_unit``; ``ValueError`` across quantities."""
    source, target = unit_of(from_unit), unit_of(to_unit)
    if source in TEMPERATURES and target in TEMPERATURES:
        scale, shift = TEMPERATURES[source]
        celsius = value * scale + shift
        scale, shift = TEMPERATURES[target]
        return (celsius - shift) / scale
    if source in TEMPERATURES or target in TEMPERATURES or UNITS[source][0] != UNITS[target][0]:
        raise ValueError(f"cannot convert {from_unit} to {to_unit}")
    return value * UNITS[source][1] / UNITS[target][1]


@tool
def convert_units(value: float, from_unit: str, to_unit: str) -> str:
    """Convert between units of length, mass, volume, speed or temperature, e.g. 5 miles to km."""
    return f"{value:g} {from_unit} is {convert(value, from_unit, to_unit):.4g} {to_unit}"


TOOLS = [time_in, calculate, convert_units]


def create_agent() -> Agent:
    """A new agent for each conversation, on ``VOICE_AGENT_MODEL`` (or ``--model``)."""
    return Agent(model=make_model(), tools=TOOLS, system_prompt=SYSTEM_PROMPT)
