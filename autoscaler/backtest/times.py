"""Times and durations on the command line: RFC 3339, Unix seconds, ``now`` and relative forms."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from autoscaler.prometheus.promql import parse_duration

_UNIX = re.compile(r"^\d+(\.\d+)?$")
_RELATIVE = re.compile(r"^(now)?\s*([+-])\s*(\S+)$")
_PLAIN_SECONDS = re.compile(r"^\d+(\.\d+)?$")


class TimeError(ValueError):
    """A time or duration that cannot be read; the message says which forms are accepted."""


TIME_FORMS = ("RFC 3339 (2024-05-07T09:00:00Z, 2024-05-07T11:00:00+02:00), a date (2024-05-07, midnight UTC), "
              "Unix seconds (1715072400), now, or a duration relative to now (-2h, now-1d12h, now+30m)")


def parse_time(text: str, now: float) -> float:
    """Unix seconds for one of :data:`TIME_FORMS`."""
    value = text.strip()
    if value == "now":
        return now
    if _UNIX.match(value):
        return float(value)
    relative = _RELATIVE.match(value)
    if relative is not None:
        _, sign, duration_text = relative.groups()
        seconds = parse_duration(duration_text)
        if seconds is None:
            raise TimeError(f"{text!r}: {duration_text!r} is not a duration (e.g. 90s, 15m, 2h, 1d12h, 1w)")
        return now - seconds if sign == "-" else now + seconds
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        raise TimeError(f"{text!r} is not a time; use {TIME_FORMS}") from None
    if parsed.tzinfo is None:
        raise TimeError(f"{text!r} has no time zone: add Z for UTC or an offset such as +02:00")
    return parsed.timestamp()


def parse_step(text: str) -> float:
    """A positive Prometheus duration (``15s``, ``1m``, ``500ms``) or plain seconds (``15``, ``0.5``),
    in seconds, whole milliseconds (Prometheus' resolution)."""
    value = text.strip()
    seconds = float(value) if _PLAIN_SECONDS.match(value) else parse_duration(value)
    if seconds is None:
        raise TimeError(f"{text!r} is not a duration (e.g. 15s, 1m, 500ms, or plain seconds)")
    if seconds <= 0:
        raise TimeError(f"{text!r}: must be longer than 0")
    if round(seconds * 1000) != seconds * 1000:
        raise TimeError(f"{text!r}: must be a whole number of milliseconds")
    return seconds


def format_time(t: float) -> str:
    """RFC 3339 in UTC (``2024-05-07T09:00:15Z``; milliseconds only when there are any)."""
    moment = datetime.fromtimestamp(t, UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def format_seconds(seconds: float) -> str:
    """A readable span: ``45s``, ``12m30s``, ``3h5m``, ``2d4h``."""
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
