"""RFC 3339 timestamps (``2024-05-01T22:30:00Z``), as Kubernetes writes them, to exact Unix seconds."""

from __future__ import annotations

import calendar
import math
import re
from datetime import UTC, datetime, timedelta
from fractions import Fraction

_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


class TimestampError(ValueError):
    """The text is not an RFC 3339 date-time."""


def parse_rfc3339(text: str) -> Fraction:
    """Exact Unix seconds of an RFC 3339 date-time (``Z`` or a numeric offset; fractions of a second kept)."""
    match = _RFC3339.match(text)
    if match is None:
        raise TimestampError(f'must be an RFC 3339 time such as "2024-05-01T22:30:00Z", not "{text}"')
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
    except ValueError as exc:
        raise TimestampError(f'"{text}": {exc}') from None
    offset = 0
    if zone not in ("Z", "z"):
        offset_hours, offset_minutes = int(zone[1:3]), int(zone[4:6])
        if offset_hours > 23 or offset_minutes > 59:
            raise TimestampError(f'"{text}": the UTC offset must be between -23:59 and +23:59')
        offset = (offset_hours * 3600 + offset_minutes * 60) * (1 if zone[0] == "+" else -1)
    whole = calendar.timegm((int(year), int(month), int(day), int(hour), int(minute), int(second), 0, 0, 0))
    part = Fraction(int(fraction[1:]), 10 ** (len(fraction) - 1)) if fraction else Fraction(0)
    return whole - offset + part


def format_rfc3339(unix_seconds: Fraction | float) -> str:
    """A Unix time as an RFC 3339 UTC string, to the whole second (as metav1.Time prints)."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=math.floor(unix_seconds))
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
