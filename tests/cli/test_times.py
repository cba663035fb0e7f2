"""Times and durations on the command line (backtest's and convert's --from, --to, --step)."""

from __future__ import annotations

import pytest

from autoscaler.cli.times import TimeError, parse_duration_option, parse_step, parse_time

NOW = 1_715_072_400.0  # 2024-05-07T09:00:00Z


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW),
        ("-2h", NOW - 7200),
        ("now-1d12h", NOW - 129_600),
        ("now+30m", NOW + 1800),
        ("2024-05-07T09:00:00Z", NOW),
        ("2024-05-07T11:00:00+02:00", NOW),
        ("2024-05-07", NOW - 9 * 3600),
        ("1715072400", NOW),
        ("2024-05-07T09:00:00.250Z", NOW + 0.25),
    ],
)
def test_times(text: str, expected: float) -> None:
    assert parse_time(text, NOW) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2024-05-07T09:00:00", "has no time zone: add Z for UTC"),
        ("2024-05-07T09:00Z", "is not a time"),  # RFC 3339 has seconds
        ("2024-05-07 09:00:00Z", "is not a time"),
        ("2024-13-07", "is not a time"),
        ("-1.5m", "is not a duration"),
    ],
)
def test_what_is_not_a_time(text: str, message: str) -> None:
    with pytest.raises(TimeError, match=message):
        parse_time(text, NOW)


def test_steps() -> None:
    assert [parse_step(s) for s in ("15s", "1m", "500ms", "15", "0.5", "1h30m")] == [15, 60, 0.5, 15, 0.5, 5400]
    for bad in ("0s", "-1", "0.0001", "abc"):
        with pytest.raises(TimeError):
            parse_step(bad)


def test_durations_of_options() -> None:
    assert parse_duration_option(" 30s ") == 30 and parse_duration_option("30") is None
    with pytest.raises(TimeError, match="longer than the time from 1970 to 9999"):
        parse_duration_option("99999y")
