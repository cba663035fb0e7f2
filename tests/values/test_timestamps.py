"""RFC 3339: the one parser (exact, and lenient to documents anyone may write) and the three printed forms."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.values.timestamps import TimestampError, parse_rfc3339, parse_rfc3339_exact, rfc3339, rfc3339_millis

NOW = 1_715_072_400  # 2024-05-07T09:00:00Z


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2024-05-07T09:00:00Z", NOW),
        ("2024-05-07t09:00:00z", NOW),
        ("2024-05-07T11:00:00+02:00", NOW),
        ("2024-05-07T08:30:00-00:30", NOW),
        ("2024-05-07T09:00:00.25Z", NOW + Fraction(1, 4)),
        ("2024-05-07T09:00:00.000000001Z", NOW + Fraction(1, 10**9)),  # kept exactly, beyond a float's µs
        ("1970-01-01T00:00:00Z", 0),
    ],
)
def test_rfc3339_times(text: str, seconds: Fraction) -> None:
    assert parse_rfc3339_exact(text) == seconds
    assert parse_rfc3339(text) == float(seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2024-05-07", "must be an RFC 3339 time"),
        ("2024-05-07T09:00:00", "must be an RFC 3339 time"),  # no zone: which one?
        ("2024-05-07 09:00:00Z", "must be an RFC 3339 time"),
        ("2024-05-07T09:00Z", "must be an RFC 3339 time"),
        ("٢٠٢٤-05-07T09:00:00Z", "must be an RFC 3339 time"),  # digits are 0-9
        ("2024-02-30T09:00:00Z", "day is out of range for month"),
        ("2024-05-07T24:00:00Z", "hour must be in 0..23"),
        ("2024-05-07T09:00:00+24:00", "the UTC offset must be between -23:59 and +23:59"),
    ],
)
def test_what_is_not_an_rfc3339_time(text: str, message: str) -> None:
    with pytest.raises(TimestampError, match=re.escape(message)):
        parse_rfc3339_exact(text)
    assert parse_rfc3339(text) is None


@pytest.mark.parametrize("value", [None, 1715072400, "", ["2024-05-07T09:00:00Z"]])
def test_a_document_s_time_of_another_type_is_no_time(value: object) -> None:
    assert parse_rfc3339(value) is None


def test_printed_forms() -> None:
    assert rfc3339(NOW) == "2024-05-07T09:00:00Z"
    assert rfc3339(NOW + 0.9) == "2024-05-07T09:00:00Z"  # metav1.Time: the fraction is cut off, as Go does
    assert rfc3339(NOW + 0.25, fraction=True) == "2024-05-07T09:00:00.250000Z"  # metav1.MicroTime
    assert rfc3339_millis(NOW) == "2024-05-07T09:00:00Z"
    assert rfc3339_millis(NOW + 0.25) == "2024-05-07T09:00:00.250Z"


def test_printed_times_read_back() -> None:
    for seconds in (0.0, NOW, NOW + 0.123456):
        assert parse_rfc3339(rfc3339(seconds, fraction=True)) == pytest.approx(seconds, abs=1e-6)


@given(
    st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31)),
    st.sampled_from(["", ".5", ".000001", ".123456789", ".0"]),
    st.sampled_from(["Z", "+05:30", "-11:00"]),
)
def test_the_remembered_float_is_the_exact_time_rounded(moment: datetime, fraction: str, zone: str) -> None:
    text = moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + zone
    for _ in range(2):  # read, then answered from memory: the same value
        assert parse_rfc3339(text) == float(parse_rfc3339_exact(text))


@given(st.floats(min_value=-62_135_596_800, max_value=253_402_300_799.999, allow_nan=False))
def test_whole_second_times_print_as_datetime_prints_them(seconds: float) -> None:
    """The quick path (time.gmtime) and datetime agree over datetime's whole range, its ends included; the
    year always in four digits, as Go prints it (isoformat pads it, C's strftime %Y does not)."""
    whole = math.floor(seconds)
    moment = datetime(1970, 1, 1) + timedelta(seconds=whole)
    assert rfc3339(seconds) == moment.isoformat() + "Z"
    assert rfc3339(253_402_300_799.5) == "9999-12-31T23:59:59Z"


@pytest.mark.parametrize(
    ("seconds", "micro", "millis"),
    [
        (-62_135_596_800, "0001-01-01T00:00:00.000000Z", "0001-01-01T00:00:00Z"),
        (-30_610_224_000.25, "0999-12-31T23:59:59.750000Z", "0999-12-31T23:59:59.750Z"),
        (1_715_072_415.5, "2024-05-07T09:00:15.500000Z", "2024-05-07T09:00:15.500Z"),
    ],
)
def test_times_with_fractions_print_four_digit_years(seconds: float, micro: str, millis: str) -> None:
    assert rfc3339(seconds, fraction=True) == micro
    assert rfc3339_millis(seconds) == millis
