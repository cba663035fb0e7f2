"""Go duration syntax (time.ParseDuration), as stabilizationDuration takes it (A27)."""

from fractions import Fraction

import pytest

from autoscaler.core.durations import DurationError, parse_duration_nanos, parse_duration_seconds


@pytest.mark.parametrize(("text", "nanos"), [
    ("0", 0),
    ("-0", 0),
    ("3m", 180 * 10**9),
    ("1h30m", 5400 * 10**9),
    ("300ms", 300_000_000),
    ("1.5h", 5400 * 10**9),
    (".5s", 500_000_000),
    ("1.s", 10**9),
    ("+5s", 5 * 10**9),
    ("-5s", -5 * 10**9),
    ("1µs", 1000),      # U+00B5 micro sign
    ("1μs", 1000),      # U+03BC Greek mu
    ("1us", 1000),
    ("2h45m30.5s", (2 * 3600 + 45 * 60) * 10**9 + 30_500_000_000),
    ("1.0000000001s", 10**9),   # below a nanosecond is dropped, as Go does
])
def test_go_accepts(text: str, nanos: int) -> None:
    assert parse_duration_nanos(text) == nanos


@pytest.mark.parametrize(("text", "message"), [
    ("", "invalid duration"),
    ("3d", 'unknown unit "d"'),
    ("1", "missing unit"),
    ("m", "invalid duration"),
    (".s", "invalid duration"),
    ("1.2.3s", "missing unit"),
    (" 3m", "invalid duration"),
    ("3 m", 'unknown unit " m"'),
    ("3M", 'unknown unit "M"'),
    ("9999999999h", "out of range"),
])
def test_go_refuses(text: str, message: str) -> None:
    with pytest.raises(DurationError, match=message):
        parse_duration_nanos(text)


def test_exact_seconds() -> None:
    assert parse_duration_seconds("1m30s") == 90
    assert parse_duration_seconds("250ms") == Fraction(1, 4)
