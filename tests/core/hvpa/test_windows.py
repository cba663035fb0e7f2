"""Maintenance windows: HHMMSS±hhmm in UTC, inclusive at both ends, spanning midnight when end < begin (A19)."""

import pytest

from autoscaler.core.hvpa.spec import MaintenanceWindow
from autoscaler.core.hvpa.windows import WindowTimeError, in_window, parse_time_of_day

DAY = 1_714_521_600  # 2024-05-01T00:00:00Z


def window(begin: str, end: str) -> MaintenanceWindow:
    return MaintenanceWindow(parse_time_of_day(begin), parse_time_of_day(end), begin, end)


def at(hhmmss: str) -> int:
    return DAY + int(hhmmss[:2]) * 3600 + int(hhmmss[2:4]) * 60 + int(hhmmss[4:])


def test_offsets_are_converted_to_utc() -> None:
    assert parse_time_of_day("220000+0000") == 22 * 3600
    assert parse_time_of_day("230000+0100") == 22 * 3600
    assert parse_time_of_day("220000-0000") == 22 * 3600
    assert parse_time_of_day("010000+0200") == 23 * 3600  # the previous UTC day
    assert parse_time_of_day("233000-0130") == 3600  # the next UTC day


@pytest.mark.parametrize(
    "text",
    ["22:00:00+01:00", "220000Z", "220000", "2200+0100", "240000+0000", "226000+0000", "220000+2400", " 220000+0000"],
)
def test_bad_times_are_refused(text: str) -> None:
    with pytest.raises(WindowTimeError):
        parse_time_of_day(text)


def test_a_day_window_is_inclusive_at_both_ends() -> None:
    w = window("090000+0000", "170000+0000")
    assert [in_window(w, at(t)) for t in ("085959", "090000", "120000", "170000", "170001")] == [
        False,
        True,
        True,
        True,
        False,
    ]


def test_a_window_spanning_midnight() -> None:
    w = window("220000+0000", "040000+0000")
    assert [
        in_window(w, at(t)) for t in ("215959", "220000", "235959", "000000", "035959", "040000", "040001", "120000")
    ] == [False, True, True, True, True, True, False, False]


def test_a_local_window_that_spans_midnight_only_in_utc() -> None:
    w = window("003000+0100", "020000+0100")  # 23:30–01:00 UTC
    assert in_window(w, at("233000")) and in_window(w, at("000000")) and in_window(w, at("010000"))
    assert not in_window(w, at("232959")) and not in_window(w, at("010001"))


def test_begin_equal_to_end_is_one_second() -> None:
    w = window("030000+0000", "030000+0000")
    assert in_window(w, at("030000")) and not in_window(w, at("030001")) and not in_window(w, at("025959"))


def test_fractions_of_a_second_count_as_the_second() -> None:
    w = window("090000+0000", "170000+0000")
    assert in_window(w, at("170000") + 0.9)
