"""RFC 3339 timestamps (``2024-05-01T22:30:00Z``), as Kubernetes writes them: the one parser, and the
three ways this project prints one.

:func:`parse_rfc3339_exact` reads a time a person wrote (a scenario, a spec) and says what is wrong with
it; :func:`parse_rfc3339` reads one from a document anyone may write (a stored status, an object from the
API server) and gives None for anything that is not a time. Both accept exactly RFC 3339's ``date-time``:
``T`` (or ``t``) between date and time, ``Z`` (or ``z``) or a numeric ``±hh:mm`` offset, any number of
fraction digits (kept exactly).
"""

from __future__ import annotations

import calendar
import functools
import math
import re
import time
from datetime import UTC, datetime, timedelta
from fractions import Fraction

# re.ASCII: RFC 3339's digits are 0-9, where Python's \d is any Unicode digit.
_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$", re.ASCII)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FIRST_SECOND = -62_135_596_800  # 0001-01-01T00:00:00Z, datetime's first second
_LAST_SECOND = 253_402_300_799  # 9999-12-31T23:59:59Z, its last
_YEAR_1000 = -30_610_224_000  # 1000-01-01T00:00:00Z: from here on, C's %Y prints four digits as Go does


class TimestampError(ValueError):
    """The text is not an RFC 3339 date-time."""


def parse_rfc3339_exact(text: str) -> Fraction:
    """Exact Unix seconds of an RFC 3339 date-time (``Z`` or a numeric offset; fractions of a second kept)."""
    whole, fraction = _seconds(text)
    return Fraction(whole) + _fraction(fraction) if fraction else Fraction(whole)


def _fraction(text: str) -> Fraction:
    """``.25`` → 1/4."""
    return Fraction(int(text[1:]), 10 ** (len(text) - 1))


def _seconds(text: str) -> tuple[int, str | None]:
    """Whole Unix seconds of an RFC 3339 date-time, and its fraction's text (``.25``) if it has one."""
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
    return whole - offset, fraction


def parse_rfc3339(value: object) -> float | None:
    """Unix seconds of an RFC 3339 date-time, or None for anything that is not one (absent, another
    type, another format): for documents anyone may write, where a bad time is left out, not trusted.

    Remembers the last texts it read: the pods of a LIST carry a handful of distinct times each (start,
    conditions), often the same ones, and start-up reads 100,000 of them at 10,000 targets."""
    if not isinstance(value, str):
        return None
    return _parse_remembered(value)


@functools.lru_cache(maxsize=4096)
def _parse_remembered(text: str) -> float | None:
    try:
        whole, fraction = _seconds(text)
    except TimestampError:
        return None
    # Without a fraction the float is exact; with one, a Fraction gives the correctly rounded float.
    return float(whole + _fraction(fraction)) if fraction else float(whole)


def rfc3339(seconds: float, *, fraction: bool = False) -> str:
    """A Unix time as Kubernetes writes it, in UTC: ``metav1.Time`` (whole seconds, the fraction cut
    off as Go's formatting does) or, with ``fraction``, ``metav1.MicroTime`` (six digits). The year has
    four digits, as Go writes it (``0001-01-01T00:00:00Z``; C's ``%Y`` would print ``1-01-01…``)."""
    if fraction:
        moment = datetime.fromtimestamp(seconds, UTC)
        return _date_time(moment.timetuple()) + f".{moment.microsecond:06d}Z"
    whole = math.floor(seconds)
    if _YEAR_1000 <= whole <= _LAST_SECOND:
        # The same C strftime as datetime's, a third of the cost: a status write prints several.
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(whole))
    if _FIRST_SECOND <= whole < _YEAR_1000:
        return _date_time(time.gmtime(whole)) + "Z"
    return (_EPOCH + timedelta(seconds=whole)).isoformat()  # out of datetime's range: raises as it does


def _date_time(t: time.struct_time) -> str:
    return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"


def rfc3339_millis(seconds: float) -> str:
    """A Unix time for people to read, in UTC: ``2024-05-07T09:00:15Z``, with milliseconds only when
    there are any (``2024-05-07T09:00:15.250Z``)."""
    moment = datetime.fromtimestamp(seconds, UTC)
    if moment.microsecond:
        return _date_time(moment.timetuple()) + f".{moment.microsecond // 1000:03d}Z"
    return _date_time(moment.timetuple()) + "Z"
