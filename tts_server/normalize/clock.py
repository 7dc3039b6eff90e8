"""Times (12 and 24 hour, a.m./p.m. in every spelling) and dates (ISO, US numeric, month
names and their abbreviations, day first or month first)."""

from __future__ import annotations

import re

from tts_server.normalize.context import Context, Match
from tts_server.normalize.numbers import cardinal, clock_words, ordinal, year
from tts_server.normalize.quantities import AM_PM

# A time; its minutes may be left out in a chain with a time that has them ("9:00-10").
_TIME = re.compile(
    r"([01]?[0-9]|2[0-3])(?::([0-5][0-9])(?::([0-5][0-9]))?)?(?:([AaPp])\.?[Mm]\.?)?"
)
_ISO_DATE = re.compile(r"([12][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])")
_US_DATE = re.compile(r"(0?[1-9]|1[0-2])/(0?[1-9]|[12][0-9]|3[01])/([0-9]{4}|[0-9]{2})")
_DAY = re.compile(r"(0?[1-9]|[12][0-9]|3[01])(?:st|nd|rd|th)?")
_YEAR = re.compile(r"[12][0-9]{3}")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
MONTH_NAMES = {name.lower(): name for name in MONTHS}
MONTH_NAMES.update(
    {name[:3].lower(): name for name in MONTHS if name != "May"} | {"sept": "September"}
)


def time(ctx: Context, i: int) -> Match | None:
    """``10:30``, ``10:30am``, ``10:30 a.m.``, ``14:05``, ``9:00-17:00``; a chain of times
    ``9:00-10:00-11:00`` is each time in turn ("... to ... to ..."), a bare hour in it its
    number ("9:00-10" → "nine o'clock to ten")."""
    core = ctx.core(i)
    if ":" not in core:  # then a part has minutes: only they have a colon
        return None
    parts = re.split(r"[-–]", core)  # noqa: RUF001
    found = [_TIME.fullmatch(part) for part in parts]
    if not all(found):
        return None
    last, half, period = i, "", False
    after = ctx.core(i + 1).lower()
    if not found[-1][4] and after in AM_PM and ctx.joined(i, i + 1):  # type: ignore[index]
        last, half, period = i + 1, AM_PM[after], after.endswith(".m")
    spoken = []
    for match in found:
        hour = int(match[1])  # type: ignore[index]
        minute = int(match[2]) if match[2] else 0  # type: ignore[index]
        second = int(match[3]) if match[3] else None  # type: ignore[index]
        own = f"{match[4].upper()}M" if match[4] else ""  # type: ignore[index]
        said = own or (half if match is found[-1] else "")
        bare = not match[2] and not said  # type: ignore[index]
        spoken.append(cardinal(hour) if bare else clock_words(hour, minute, second, said))
    ends = ctx.sentence_ends_after(last)
    return ctx.replace(i, last, " to ".join(spoken), period=period, ends=ends)


def _date(month: int, day: int, year_text: str) -> str:
    if len(year_text) == 2:
        year_text = ("20" if int(year_text) < 30 else "19") + year_text
    return f"{MONTHS[month - 1]} {ordinal(day)}, {year(int(year_text))}"


def numeric_date(ctx: Context, i: int) -> Match | None:
    """``2024-03-05`` and ``3/5/2024`` → "March fifth, twenty twenty-four"."""
    core = ctx.core(i)
    iso = _ISO_DATE.fullmatch(core)
    if iso is not None:
        return ctx.replace(i, i, _date(int(iso[2]), int(iso[3]), iso[1]))
    us = _US_DATE.fullmatch(core)
    if us is not None:
        return ctx.replace(i, i, _date(int(us[1]), int(us[2]), us[3]))
    return None


def _year_after(ctx: Context, i: int) -> bool:
    """Token ``i + 1`` is a year that completes the date ending at token ``i``."""
    if i + 1 >= len(ctx.tokens) or ctx.trail(i) not in ("", ",") or ctx.lead(i + 1):
        return False
    return _YEAR.fullmatch(ctx.core(i + 1)) is not None


def named_date(ctx: Context, i: int) -> Match | None:
    """``March 5``, ``Mar. 5th, 2024``, ``5 March 2024``; a month's abbreviation alone with
    its period (``Jan.``) is the month's name."""
    core = ctx.core(i)
    month = MONTH_NAMES.get(core.lower()) if core[:1].isupper() else None
    if month is not None:
        period = ctx.trail(i).startswith(".") and core.lower() != month.lower()
        day = _DAY.fullmatch(ctx.core(i + 1)) if i + 1 < len(ctx.tokens) else None
        # Only an abbreviation's period joins a day: after "March." a sentence ends.
        marks = ("", ".") if period else ("",)
        joined = ctx.trail(i) in marks and not ctx.lead(i + 1) if day else False
        if day is not None and joined:
            spoken = f"{month} {ordinal(int(day[1]))}"
            if _year_after(ctx, i + 1):
                comma = "," if ctx.trail(i + 1) == "," else ""
                return ctx.replace(i, i + 2, f"{spoken}{comma} {year(int(ctx.core(i + 2)))}")
            return ctx.replace(i, i + 1, spoken)
        if period:
            return ctx.replace(i, i, month, period=True, ends=ctx.sentence_ends_after(i))
        return None
    day = _DAY.fullmatch(core)
    after = ctx.core(i + 1)
    month = MONTH_NAMES.get(after.lower()) if after[:1].isupper() else None
    if day is None or month is None or not ctx.joined(i, i + 1):
        return None
    spoken = f"the {ordinal(int(day[1]))} of {month}"
    if _year_after(ctx, i + 1):
        return ctx.replace(i, i + 2, f"{spoken} {year(int(ctx.core(i + 2)))}")
    return ctx.replace(i, i + 1, spoken)
