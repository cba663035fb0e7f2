"""Go duration strings (``time.ParseDuration``): ``"3m"``, ``"1h30m"``, ``"300ms"``, ``"1.5h"``, ``"0"``.

The grammar is Go's, character for character: an optional sign, then one or more ``<number><unit>``
segments, where a number is ``digits``, ``digits.``, ``.digits`` or ``digits.digits`` and the unit is
one of ``ns us µs μs ms s m h``. A unit is required except for the bare ``"0"``; there is no ``d``.
Values are exact whole nanoseconds (Go rounds a fraction's contribution down through a float64; the
exact floor agrees with it for every duration a person writes) and must fit Go's int64.
"""

from __future__ import annotations

from fractions import Fraction

_NANOS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 MICRO SIGN
    "μs": 1_000,  # U+03BC GREEK SMALL LETTER MU
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_MAX_NANOS = 2**63 - 1


class DurationError(ValueError):
    """The text is not a Go duration."""


def _digits(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    return pos


def parse_duration_nanos(text: str) -> int:
    """Whole nanoseconds of a Go duration string; raise :class:`DurationError` as Go would refuse it."""
    if not isinstance(text, str):
        raise DurationError(f"a duration must be a string such as \"3m\", not {type(text).__name__}")
    invalid = DurationError(f'invalid duration "{text}" (examples: "30s", "3m", "1h30m", "0")')
    rest = text
    negative = False
    if rest[:1] in ("-", "+"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    pos = 0
    while pos < len(rest):
        if not (rest[pos] == "." or (rest[pos].isascii() and rest[pos].isdigit())):
            raise invalid
        start = pos
        pos = _digits(rest, pos)
        whole = rest[start:pos]
        fraction = ""
        if pos < len(rest) and rest[pos] == ".":
            fraction_start = pos + 1
            pos = _digits(rest, fraction_start)
            fraction = rest[fraction_start:pos]
        if not whole and not fraction:
            raise invalid
        unit_start = pos
        while pos < len(rest) and rest[pos] != "." and not (rest[pos].isascii() and rest[pos].isdigit()):
            pos += 1
        unit = rest[unit_start:pos]
        if not unit:
            raise DurationError(f'missing unit in duration "{text}" (units: ns, us, ms, s, m, h)')
        if unit not in _NANOS_PER_UNIT:
            raise DurationError(f'unknown unit "{unit}" in duration "{text}" (units: ns, us, ms, s, m, h)')
        per_unit = _NANOS_PER_UNIT[unit]
        value = Fraction(int(whole or "0")) + (Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0)
        total += int(value * per_unit)  # floor: the value is never negative here
        if total > 2**63:
            raise DurationError(f'duration "{text}" is out of range (at most about 292 years)')
    if not negative and total > _MAX_NANOS:
        raise DurationError(f'duration "{text}" is out of range (at most about 292 years)')
    return -total if negative else total


def parse_duration_seconds(text: str) -> Fraction:
    """Exact seconds of a Go duration string."""
    return Fraction(parse_duration_nanos(text), 1_000_000_000)
