"""Value conversion and the bad-data outcomes of the pure extraction functions."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.core.observation import (
    ExternalReading,
    MetricFailure,
    ObjectReading,
    PodsReading,
    PodUsage,
    ResourceReading,
)
from autoscaler.prometheus.extract import (
    LabelNames,
    pods_reading,
    readings_in_steps,
    resource_reading,
)
from autoscaler.prometheus.results import InstantResult, Series
from autoscaler.prometheus.sample_values import milli_or_none, plain_milli, through_float
from autoscaler.prometheus.value_readings import external_reading, object_reading, values_in_steps
from autoscaler.values.quantity import milli_from_decimal_text
from tests.prometheus.stepping import run_counting_turns, to_the_end


def reference(text: str, truncate_to_nano: bool = False) -> int | None:
    try:
        return milli_from_decimal_text(text, truncate_to_nano=truncate_to_nano)
    except ValueError:
        return None


def check_every_way(text: str, truncate_to_nano: bool = False) -> None:
    """milli_or_none, and both ways it reads a value whichever the build runs (compiled, digits first; as
    Python, through a float), give the exact conversion's answer; the digit reader gives it or declines."""
    expected = reference(text, truncate_to_nano)
    assert milli_or_none(text, truncate_to_nano) == expected, text
    assert through_float(text, truncate_to_nano) == expected, text
    plain = plain_milli(text, truncate_to_nano)
    assert plain == -1 or plain == expected, text
    if re.fullmatch(r"[0-9]{1,15}(\.[0-9]*)?", text):
        assert plain == expected, f"a plain decimal the digit reader declined: {text}"


@given(st.decimals(allow_nan=False, allow_infinity=False, places=None) | st.floats(allow_nan=True))
def test_fast_path_equals_the_core_conversion(number: Decimal | float) -> None:
    texts = {str(number), repr(number)}
    if isinstance(number, Decimal):
        texts.add(format(number, "f"))  # the plain form the fast path takes
    for text in texts:
        check_every_way(text)
        check_every_way(text, truncate_to_nano=True)


@given(st.from_regex(r"-?[0-9]{1,30}(\.[0-9]{0,30})?", fullmatch=True))
def test_plain_decimals_of_any_length_equal_the_core_conversion(text: str) -> None:
    """The texts the fast paths take (and, past their length, give to the general path)."""
    check_every_way(text)
    check_every_way(text, truncate_to_nano=True)


@given(
    st.integers(min_value=0, max_value=10**12),
    st.sampled_from([Decimal(0), Decimal("0.000001")]),
    st.integers(min_value=-1, max_value=1),
    st.integers(min_value=6, max_value=30),
    st.booleans(),
)
def test_values_next_to_a_boundary_equal_the_core_conversion(
    milli: int, boundary: Decimal, sign: int, digits: int, truncate: bool
) -> None:
    """Next to a whole milli, or to a milli and one nano (where cutting below a nano changes the rounding):
    where a float read of the value could round to the wrong side, milli_or_none must not use it."""
    value = (Decimal(milli) + boundary + sign * Decimal(10) ** -digits) / 1000
    for text in {format(value, "f"), str(value), repr(float(value))}:
        check_every_way(text, truncate_to_nano=truncate)


@given(st.text(alphabet="0123456789.-+eE_ /naifNI\u0661", max_size=24))
def test_any_text_equals_the_core_conversion(text: str) -> None:
    """Whatever float() reads differently from the exact conversion (underscores, blanks, other digits,
    infinities) must not take the float path, or the digits, to a different answer."""
    check_every_way(text)
    check_every_way(text, truncate_to_nano=True)


@pytest.mark.parametrize(
    "text, milli",
    [
        ("0.3", 300),
        ("0.0001", 1),
        ("-0.0001", -1),
        ("1e-3", 1),
        ("104857600", 104857600000),
        ("0.30000000000000004", 301),
        ("2.5e+06", 2500000000),
        ("-7", -7000),
        ("1.", 1000),
    ],
)
def test_values(text: str, milli: int) -> None:
    assert milli_or_none(text) == milli
    check_every_way(text)


@pytest.mark.parametrize("text", ["NaN", "+Inf", "-Inf", "", "abc", "0x10"])
def test_not_values(text: str) -> None:
    assert milli_or_none(text) is None
    check_every_way(text)


def test_pods_reading_skips_bad_values_and_series_without_the_pod_label() -> None:
    names = LabelNames()
    reading = pods_reading(
        [Series({"pod": "a"}, 5.0, "NaN"), Series({"pod": "b"}, 5.0, "2"), Series({"other": "c"}, 5.0, "3")],
        names,
        30.0,
    )
    assert isinstance(reading, PodsReading) and list(reading.pods) == ["b"]
    assert reading.pods["b"].value == 2000 and reading.pods["b"].window == 30.0


def test_object_and_external_from_a_scalar_and_a_vector() -> None:
    scalar = InstantResult("scalar", scalar=Series({}, 9.0, "1.5"))
    assert object_reading(to_the_end(values_in_steps(scalar))) == ObjectReading(1500, 9.0)
    vector = InstantResult("vector", vector=(Series({"q": "b"}, 9.0, "2"), Series({"q": "a"}, 9.0, "0.001")))
    assert external_reading(to_the_end(values_in_steps(vector))) == ExternalReading((1, 2000), 9.0)
    assert object_reading(to_the_end(values_in_steps(vector))) == ObjectReading(2001, 9.0)
    failure = external_reading(to_the_end(values_in_steps(InstantResult("matrix"))))
    assert isinstance(failure, MetricFailure) and "returned a matrix" in failure.message


def test_cpu_rates_drop_float_noise_below_a_nanocore() -> None:
    assert milli_or_none("0.25000000000000006") == 251
    assert milli_or_none("0.25000000000000006", truncate_to_nano=True) == 250
    assert milli_or_none("0.250000001", truncate_to_nano=True) == 251
    assert milli_or_none("2.5000000000000006e-01", truncate_to_nano=True) == 250


_label_values = st.one_of(st.none(), st.sampled_from(["a", "b"]))
_series = st.builds(
    lambda pod, namespace, container, value, at: Series(
        {k: v for k, v in (("pod", pod), ("namespace", namespace), ("container", container)) if v is not None},
        at,
        value,
    ),
    st.one_of(st.none(), st.sampled_from(["p0", "p1", "p2", "x"])),
    _label_values,
    st.one_of(st.none(), st.sampled_from(["app", "side", ""])),
    st.sampled_from(["1", "0.25", "NaN", "+Inf", "3.0000001", "0.2500000001"]),
    st.sampled_from([5.0, 6.0]),
)
_wanted = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.frozensets(st.sampled_from(["p0", "p1", "p2"]))), min_size=1, max_size=3
)


def one_pass(
    vector: list[Series], wanted: list[tuple[str, frozenset[str]]], *, per_container: bool, nanocores: bool = False
) -> list[tuple[ResourceReading | PodsReading, int]] | None:
    return to_the_end(
        readings_in_steps(vector, wanted, LabelNames(), 30.0, per_container=per_container, nanocores=nanocores)
    )


@given(
    vector=st.lists(_series, max_size=12),
    wanted=_wanted,
    per_container=st.booleans(),
    nanocores=st.booleans(),
    step=st.integers(1, 13),
)
def test_the_one_pass_readings_equal_the_general_path(
    vector: list[Series], wanted: list[tuple[str, frozenset[str]]], per_container: bool, nanocores: bool, step: int
) -> None:
    """Whatever the step (the loop's turns between them), the readings of one pass are the general path's."""
    names = LabelNames()
    turns, fast = run_counting_turns(
        readings_in_steps(vector, wanted, names, 30.0, per_container=per_container, nanocores=nanocores, step=step)
    )
    if fast is None:
        return  # the reader takes the general path (split, then a reading per target)
    expected = []
    for namespace, pods in wanted:
        bucket = [s for s in vector if s.labels.get("pod") in pods and s.labels.get("namespace") == namespace]
        reading = (
            resource_reading(bucket, names, 30.0, nanocores=nanocores)
            if per_container
            else pods_reading(bucket, names, 30.0)
        )
        assert not isinstance(reading, MetricFailure)  # a duplicate must have sent it to the general path
        expected.append((reading, len(bucket)))
    assert fast == expected
    # A turn between each step's series (and wanted pods): none when one step holds them all.
    assert turns >= (len(vector) - 1) // step
    assert fast == one_pass(vector, wanted, per_container=per_container, nanocores=nanocores)


def test_the_one_pass_leaves_the_odd_cases_to_the_general_path() -> None:
    one = Series({"namespace": "a", "pod": "p0", "container": "app"}, 5.0, "0.25")
    assert one_pass([one], [("a", frozenset({"p0"}))], per_container=True) == [
        (ResourceReading({"p0": PodUsage({"app": 250}, 5.0, 30.0)}), 1)
    ]
    no_namespace = Series({"pod": "p0", "container": "app"}, 5.0, "0.25")
    assert one_pass([no_namespace], [("a", frozenset({"p0"}))], per_container=True) is None
    assert one_pass([one, one], [("a", frozenset({"p0"}))], per_container=True) is None
    shared = [("a", frozenset({"p0"})), ("a", frozenset({"p0", "p1"}))]
    assert one_pass([one], shared, per_container=False) is None


def test_the_digit_reader_comes_first_exactly_where_the_module_is_compiled() -> None:
    """Compiled, plain decimals are read digit by digit (cheaper there than ``float()``); as Python, through
    a float (cheaper there): the choice follows how the module itself was loaded."""
    from autoscaler import native
    from autoscaler.prometheus import sample_values

    assert ("autoscaler.prometheus.sample_values" in native.compiled()) == sample_values._DIGITS_FIRST
