"""Value conversion and the bad-data outcomes of the pure extraction functions."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.core.observation import ExternalReading, MetricFailure, ObjectReading, PodsReading
from autoscaler.core.quantity import milli_from_decimal_text
from autoscaler.prometheus.extract import (
    LabelNames,
    external_reading,
    milli_or_none,
    object_reading,
    pods_reading,
)
from autoscaler.prometheus.results import InstantResult, Series


def reference(text: str, truncate_to_nano: bool = False) -> int | None:
    try:
        return milli_from_decimal_text(text, truncate_to_nano=truncate_to_nano)
    except ValueError:
        return None


@given(st.decimals(allow_nan=False, allow_infinity=False, places=None) | st.floats(allow_nan=True))
def test_fast_path_equals_the_core_conversion(number: Decimal | float) -> None:
    texts = {str(number), repr(number)}
    if isinstance(number, Decimal):
        texts.add(format(number, "f"))  # the plain form the fast path takes
    for text in texts:
        assert milli_or_none(text) == reference(text), text
        assert milli_or_none(text, truncate_to_nano=True) == reference(text, truncate_to_nano=True), text


@pytest.mark.parametrize("text, milli", [("0.3", 300), ("0.0001", 1), ("-0.0001", -1), ("1e-3", 1),
                                         ("104857600", 104857600000), ("0.30000000000000004", 301),
                                         ("2.5e+06", 2500000000), ("-7", -7000), ("1.", 1000)])
def test_values(text: str, milli: int) -> None:
    assert milli_or_none(text) == milli


@pytest.mark.parametrize("text", ["NaN", "+Inf", "-Inf", "", "abc", "0x10"])
def test_not_values(text: str) -> None:
    assert milli_or_none(text) is None


def test_pods_reading_skips_bad_values_and_series_without_the_pod_label() -> None:
    names = LabelNames()
    reading = pods_reading([Series({"pod": "a"}, 5.0, "NaN"), Series({"pod": "b"}, 5.0, "2"),
                            Series({"other": "c"}, 5.0, "3")], names, 30.0)
    assert isinstance(reading, PodsReading) and list(reading.pods) == ["b"]
    assert reading.pods["b"].value == 2000 and reading.pods["b"].window == 30.0


def test_object_and_external_from_a_scalar_and_a_vector() -> None:
    scalar = InstantResult("scalar", scalar=Series({}, 9.0, "1.5"))
    assert object_reading(scalar) == ObjectReading(1500, 9.0)
    vector = InstantResult("vector", vector=(Series({"q": "b"}, 9.0, "2"), Series({"q": "a"}, 9.0, "0.001")))
    assert external_reading(vector) == ExternalReading((1, 2000), 9.0)
    assert object_reading(vector) == ObjectReading(2001, 9.0)
    failure = external_reading(InstantResult("matrix"))
    assert isinstance(failure, MetricFailure) and "returned a matrix" in failure.message


def test_cpu_rates_drop_float_noise_below_a_nanocore() -> None:
    from autoscaler.prometheus.extract import milli_or_none

    assert milli_or_none("0.25000000000000006") == 251
    assert milli_or_none("0.25000000000000006", truncate_to_nano=True) == 250
    assert milli_or_none("0.250000001", truncate_to_nano=True) == 251
    assert milli_or_none("2.5000000000000006e-01", truncate_to_nano=True) == 250
