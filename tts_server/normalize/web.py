"""The web and the phone: e-mail addresses, URLs and bare domains, phone numbers.

Addresses are said the way people read them out: "bob at example dot com", "github dot com
slash kokoro"; a phone number digit by digit in its groups, a pause between them.
"""

from __future__ import annotations

import re

from tts_server.normalize.context import Context, Match, table
from tts_server.normalize.numbers import digits

_EMAIL = re.compile(r"([A-Za-z0-9._%+-]+)@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)")
_URL = re.compile(
    r"(?:(?P<scheme>https?)://)?(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)(?::(?P<port>[0-9]+))?"
    r"(?P<path>/[^\s?#]*)?(?:[?#]\S*)?"
)
# Top-level domains that make a bare "name.tld" a domain; those that are also file
# extensions (.py, .sh, .md, .rs) are left out, so "main.py" stays a file name.
TLDS = table(
    "com org net edu gov mil io ai dev app co uk us ca de fr es it nl eu au in jp cn ru br info "
    "biz me tv xyz tech site online store blog cloud news shop ly gg so to fm"
)
_PHONE = re.compile(
    r"(?:(?P<country>\+?1)[-. ])?(?:\((?P<area>[2-9][0-9]{2})\) ?|(?P<bare>[2-9][0-9]{2})[-. ])"
    r"(?P<exchange>[0-9]{3})[-. ](?P<line>[0-9]{4})"
)
_PHONE_START = re.compile(r"1?[-. ]?[2-9][0-9]{2}(?:[-. ]|\Z)")  # where a phone number may start
_LOCAL_PHONE = re.compile(r"([2-9][0-9]{2})-([0-9]{4})")
_INTERNATIONAL = re.compile(r"\+[0-9]{1,3}(?:[-. ][0-9]{1,4}){2,5}")
_RUNS = re.compile(r"[A-Za-z]+|[0-9]+|.")
SYMBOL_WORDS = {".": "dot", "_": "underscore", "-": "dash", "+": "plus", "/": "slash"}
SYMBOL_WORDS |= {"%": "percent", "~": "tilde", ":": "colon", "=": "equals", "&": "and"}


def _spell(part: str) -> str:
    """A piece of an address: letter runs as words, digits one by one, symbols by name."""
    words = []
    for run in _RUNS.findall(part):
        if run[0].isascii() and run[0].isalpha():
            words.append(run)
        elif "0" <= run[0] <= "9":
            words.append(digits(run))
        elif run in SYMBOL_WORDS:
            words.append(SYMBOL_WORDS[run])
    return " ".join(words)


def email(ctx: Context, i: int) -> Match | None:
    """``bob.smith@example.com`` → "bob dot smith at example dot com"."""
    if not ctx.options.emails:
        return None
    found = _EMAIL.fullmatch(ctx.core(i))
    if found is None:
        return None
    return ctx.replace(i, i, f"{_spell(found[1])} at {_spell(found[2])}")


def url(ctx: Context, i: int) -> Match | None:
    """``https://www.example.com/docs`` → "w w w dot example dot com slash docs"; a bare
    ``example.com`` only with a known top-level domain."""
    if not ctx.options.urls:
        return None
    core = ctx.core(i)
    found = _URL.fullmatch(core)
    if found is None:
        return None
    host = found["host"]
    labels = host.split(".")
    # A letter before the top-level domain: "123.example.com", but not "5.so" (no space typed).
    known = labels[-1].lower() in TLDS and any(c.isalpha() for c in host.rpartition(".")[0])
    if not (found["scheme"] or labels[0].lower() == "www" or known):
        return None
    words = ["w w w" if label.lower() == "www" else _spell(label) for label in labels]
    spoken = " dot ".join(words)
    if found["port"]:
        spoken += f" colon {digits(found['port'])}"
    path = (found["path"] or "").strip("/")
    if path:
        spoken += " slash " + " slash ".join(_spell(part) for part in path.split("/") if part)
    return ctx.replace(i, i, spoken)


def _groups(*groups: str) -> str:
    return ", ".join(digits(group) for group in groups if group)


def phone(ctx: Context, i: int) -> Match | None:
    """``555-123-4567``, ``(555) 123-4567``, ``+1 555 123 4567``, ``+44 20 7946 0958``,
    ``555-1234`` → digit by digit in groups: "five five five, one two three, ..."; with
    phones off, as written (not read as a range or sums of numbers)."""
    core = ctx.core(i)
    if not (core[:1] == "+" or ctx.lead(i).endswith("(") or _PHONE_START.match(core)):
        return None
    found = _phone(ctx, i)
    if found is None or ctx.options.phones:
        return found
    return Match(found.start, found.end, ctx.text[found.start : found.end])


def _phone(ctx: Context, i: int) -> Match | None:
    core = ctx.core(i)
    token = ctx.tokens[i]
    start = token.core_start - (1 if ctx.lead(i).endswith("(") else 0)
    for last in range(min(len(ctx.tokens), i + 4) - 1, i - 1, -1):
        end = ctx.tokens[last].core_end
        written = ctx.text[start:end]
        found = _PHONE.fullmatch(written)
        if found is not None:
            country = "one" if found["country"] else ""
            area = found["area"] or found["bare"]
            spoken = _groups(area, found["exchange"], found["line"])
            spoken = f"{country}, {spoken}" if country else spoken
            if found["country"] and found["country"].startswith("+"):
                spoken = "plus " + spoken
            return Match(start, end, spoken)
        if _INTERNATIONAL.fullmatch(written) is not None:
            groups = re.split(r"[-. ]", written[1:])
            return Match(start, end, "plus " + _groups(*groups))
    local = _LOCAL_PHONE.fullmatch(core)
    if local is not None and not local[2].endswith("00"):  # "100-1000" is a range
        return ctx.replace(i, i, _groups(local[1], local[2]))
    return None
