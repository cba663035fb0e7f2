"""Durations: Go's syntax (time.ParseDuration), as stabilizationDuration takes it (A27); Prometheus'
(model.ParseDuration); and the command line's."""

from fractions import Fraction

import pytest

from autoscaler.values.durations import (
    DurationError,
    format_prometheus_duration,
    format_seconds,
    parse_duration_text,
    parse_go_duration,
    parse_go_duration_nanos,
    parse_prometheus_duration,
    parse_retry_after,
)


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
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
        ("1µs", 1000),  # U+00B5 micro sign
        ("1μs", 1000),  # U+03BC Greek mu
        ("1us", 1000),
        ("2h45m30.5s", (2 * 3600 + 45 * 60) * 10**9 + 30_500_000_000),
        ("1.0000000001s", 10**9),  # below a nanosecond is dropped, as Go does
    ],
)
def test_go_accepts(text: str, nanos: int) -> None:
    assert parse_go_duration_nanos(text) == nanos


@pytest.mark.parametrize(
    ("text", "message"),
    [
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
    ],
)
def test_go_refuses(text: str, message: str) -> None:
    with pytest.raises(DurationError, match=message):
        parse_go_duration_nanos(text)


def test_exact_seconds() -> None:
    assert parse_go_duration("1m30s") == 90
    assert parse_go_duration("250ms") == Fraction(1, 4)


@pytest.mark.parametrize(
    "text, seconds", [("2m", 120), ("90s", 90), ("1h30m", 5400), ("500ms", 0.5), ("1m30s500ms", 90.5), ("1d", 86400)]
)
def test_prometheus_durations(text: str, seconds: float) -> None:
    assert parse_prometheus_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "2", "m", "1.5m", "2 m", "1s1m", "-1s", "٣m", "１s"])  # digits are 0-9
def test_invalid_prometheus_durations(text: str) -> None:
    assert parse_prometheus_duration(text) is None


def test_format_prometheus_duration() -> None:
    assert [format_prometheus_duration(s) for s in (120, 0.5, 1.25)] == ["120s", "500ms", "1250ms"]


@pytest.mark.parametrize(
    ("text", "plain", "seconds"),
    [
        ("90s", False, 90),
        (" 1h30m ", False, 5400),
        ("1w", False, 7 * 86400),
        ("15", False, None),
        ("15", True, 15),
        ("0.5", True, 0.5),
        ("1e3", True, 1000),
        ("2m", True, 120),
        ("abc", True, None),
        ("1.5m", True, None),
    ],
)
def test_command_line_durations(text: str, plain: bool, seconds: float | None) -> None:
    """A Prometheus duration, or where an option allows it plain seconds (a number as Python reads one)."""
    assert parse_duration_text(text, plain_seconds=plain) == seconds


def test_command_line_durations_leave_the_range_to_the_caller_but_refuse_absurd_lengths() -> None:
    assert parse_duration_text("inf", plain_seconds=True) == float("inf")
    assert parse_duration_text("-5", plain_seconds=True) == -5
    with pytest.raises(DurationError, match="a duration of more than 64 characters"):
        parse_duration_text("9" * 5000 + "d")


def test_readable_spans() -> None:
    assert [format_seconds(x) for x in (0.5, 45, 750, 11_100, 187_200, 86_400)] == [
        "0.5s",
        "45s",
        "12m30s",
        "3h5m",
        "2d4h",
        "1d",
    ]


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("3", 3),
        ("1.5", 1.5),
        (None, None),
        ("", None),
        ("0", None),
        ("-1", None),
        ("inf", None),
        ("nan", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", None),
        (3, None),
    ],
)
def test_retry_after(header: object, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds
