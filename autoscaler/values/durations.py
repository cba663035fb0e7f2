"""Durations, in every spelling this project reads, each parsed here and nowhere else.

* **Go's** (``time.ParseDuration``), as the HVPA fields of a target spec take them (``"3m"``, ``"1h30m"``,
  ``"300ms"``, ``"1.5h"``, ``"0"``). The grammar is Go's, character for character: an optional sign, then
  one or more ``<number><unit>`` segments, where a number is ``digits``, ``digits.``, ``.digits`` or
  ``digits.digits`` and the unit is one of ``ns us µs μs ms s m h``. A unit is required except for the bare
  ``"0"``; there is no ``d``. Values are exact whole nanoseconds (Go rounds a fraction's contribution down
  through a float64; the exact floor agrees with it for every duration a person writes) and must fit Go's
  int64.
* **Prometheus'** (``model.ParseDuration``), as PromQL and Prometheus' HTTP API take them (``90s``,
  ``1h30m``, ``1d``, ``500ms``): whole numbers, units ``y w d h m s ms`` in that order.
* **The command line's**: a Prometheus duration or, where an option says so, plain seconds
  (:func:`parse_duration_text`).

And HTTP's ``Retry-After`` seconds (:func:`parse_retry_after`).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

# -- Go's durations (time.ParseDuration) ---------------------------------------------------------------------

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
    """The text is not a duration (or not one a person could mean)."""


def _digits(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    return pos


def parse_go_duration_nanos(text: str) -> int:
    """Whole nanoseconds of a Go duration string; raise :class:`DurationError` as Go would refuse it."""
    if not isinstance(text, str):
        raise DurationError(f'a duration must be a string such as "3m", not {type(text).__name__}')
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


def parse_go_duration(text: str) -> Fraction:
    """Exact seconds of a Go duration string."""
    return Fraction(parse_go_duration_nanos(text), 1_000_000_000)


# -- Prometheus' durations (model.ParseDuration), as PromQL range selectors and its HTTP API take them ----------

# re.ASCII: Python's \d is any Unicode digit (int() reads "٣" as 3); Go's regexp, and Prometheus, take 0-9.
_PROMETHEUS = re.compile(
    r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$", re.ASCII
)
_PROMETHEUS_UNITS = (365 * 86400.0, 7 * 86400.0, 86400.0, 3600.0, 60.0, 1.0, 0.001)


def parse_prometheus_duration(text: str) -> float | None:
    """Seconds in a Prometheus duration (``90s``, ``2m``, ``1h30m``, ``1d``, ``500ms``); None if invalid.

    Units in descending order, each at most once, whole numbers only; surrounding blanks are ignored."""
    match = _PROMETHEUS.match(text.strip())
    if not match or not text.strip() or not any(match.groups()):
        return None
    return sum(int(g) * unit for g, unit in zip(match.groups(), _PROMETHEUS_UNITS, strict=True) if g)


def format_prometheus_duration(seconds: float) -> str:
    """A Prometheus duration for ``seconds`` (whole seconds when possible, else milliseconds)."""
    millis = round(seconds * 1000)
    if millis <= 0:
        raise ValueError(f"duration must be positive: {seconds!r}")
    if millis % 1000 == 0:
        return f"{millis // 1000}s"
    return f"{millis}ms"


# -- durations a person types on the command line ------------------------------------------------------------

MAX_DURATION_TEXT = 64  # characters; Python will not read thousands of digits into an int


def parse_duration_text(text: str, *, plain_seconds: bool = False) -> float | None:
    """Seconds in a duration typed on the command line: a Prometheus duration (``90s``, ``1h30m``,
    ``1d``) or, with ``plain_seconds``, also a number of seconds as Python reads one (``15``, ``0.5``,
    ``1e3``; ``inf`` and ``nan`` too, for the caller's range to refuse with its own words).

    None when the text is neither; :class:`DurationError` when it is more than
    :data:`MAX_DURATION_TEXT` characters long (no duration a person means is)."""
    value = text.strip()
    if len(value) > MAX_DURATION_TEXT:
        raise DurationError(f"{value[:20]!r}…: a duration of more than {MAX_DURATION_TEXT} characters")
    if plain_seconds:
        try:
            return float(value)
        except ValueError:
            pass
    return parse_prometheus_duration(value)


def parse_retry_after(value: object) -> float | None:
    """Seconds to wait from an HTTP ``Retry-After`` header (RFC 9110's delay-seconds; a decimal is read
    too); None when there is none, or it is not a positive finite number (an HTTP-date is not read: the
    API server sends seconds)."""
    if not isinstance(value, str):
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def format_seconds(seconds: float) -> str:
    """A readable span: ``45s``, ``12m30s``, ``3h5m``, ``2d4h`` (``0.5s`` below a second)."""
    total = round(seconds)
    if total < 60:
        return f"{seconds:.3g}s" if seconds < 1 else f"{total}s"
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    return f"{minutes}m{secs}s" if secs else f"{minutes}m"
