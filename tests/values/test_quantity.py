"""Quantities parse, round and print exactly as apimachinery's resource.Quantity."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.values.quantity import (
    Format,
    Quantity,
    QuantityError,
    format_milli,
    format_quantity,
    milli_from_decimal_text,
)


@pytest.mark.parametrize(
    ("text", "canonical", "milli"),
    [
        ("0", "0", 0),
        ("500m", "500m", 500),
        ("1", "1", 1000),
        ("1000m", "1", 1000),
        ("1.5", "1500m", 1500),
        (".5", "500m", 500),
        ("0.1", "100m", 100),
        ("100k", "100k", 100_000_000),
        ("1500k", "1500k", 1_500_000_000),
        ("1.5M", "1500k", 1_500_000_000),
        ("2e3", "2e3", 2_000_000),
        ("12e6", "12e6", 12_000_000_000),
        ("1E", "1E", 10**21),
        ("1E3", "1e3", 1_000_000),
        ("1e-3", "1e-3", 1),
        ("1Ki", "1Ki", 1_024_000),
        ("1.5Gi", "1536Mi", 1_610_612_736_000),
        ("10240Ki", "10Mi", 10_485_760_000),
        ("0.5Ki", "512", 512_000),
        ("1024", "1024", 1_024_000),
        ("-1.5Gi", "-1536Mi", -1_610_612_736_000),
        ("+5", "5", 5000),
        ("0.1n", "1n", 1),
        ("0.000000000001", "1n", 1),
        ("1.0001Mi", "1048680857600u", 1_048_680_858),
        ("1000E", "1e21", 10**24),
    ],
)
def test_parse_and_print(text: str, canonical: str, milli: int) -> None:
    quantity = Quantity.parse(text)
    assert str(quantity) == canonical
    assert quantity.milli_value() == milli


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "1e", "1Kb", "--1", "1 m", "1K", "1mm", "1e3.5"])
def test_invalid(text: str) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(text)


def test_go_scanner_leniency_is_mirrored() -> None:
    # apimachinery reads a number part without digits as zero.
    assert Quantity.parse(".").value == 0
    assert Quantity.parse("m").value == 0
    assert Quantity.parse("+").value == 0
    assert Quantity.parse("e3").value == 0


def test_milli_value_rounds_up_away_from_zero() -> None:
    assert Quantity.parse("1.1m").milli_value() == 2
    assert Quantity.parse("-1.1m").milli_value() == -2
    assert Quantity.parse("1u").milli_value() == 1


def test_binary_values_are_capped_at_max_int64_decimal_ones_are_not() -> None:
    assert Quantity.parse("16Ei").value == 2**63 - 1
    assert Quantity.parse("100E").value == 10**20


def test_formats() -> None:
    assert Quantity.parse("1Gi").format is Format.BINARY_SI
    assert Quantity.parse("0.5Ki").format is Format.BINARY_SI
    assert Quantity.parse("1e3").format is Format.DECIMAL_EXPONENT
    # A binary value below one is printed (and kept) as decimal.
    assert Quantity.parse("0.0001Ki").format is Format.DECIMAL_SI
    assert format_quantity(Fraction(3, 2), Format.BINARY_SI) == "1500m"


def test_exact_arithmetic_no_float() -> None:
    total = sum((Quantity.parse(t).value for t in ["0.1", "0.2"]), Fraction(0))
    assert total == Fraction(3, 10)
    assert Quantity.from_milli(300).value == Fraction(3, 10)


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("0.3", 300),
        ("1e-3", 1),
        ("0.0001", 1),
        ("120", 120_000),
        ("2.5e2", 250_000),
        ("-0.5", -500),
    ],
)
def test_prometheus_values_convert_exactly(text: str, milli: int) -> None:
    assert milli_from_decimal_text(text) == milli


@pytest.mark.parametrize("text", ["NaN", "+Inf", "-Inf", "abc"])
def test_prometheus_non_numbers_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        milli_from_decimal_text(text)


@given(
    st.one_of(
        st.integers(-(10**24), 10**24),
        st.integers(-10, 10).map(lambda k: k * 1_024_000),  # binary round numbers and their neighbours
        # whole binary values and their neighbours, a milli to a tenth away
        st.tuples(st.integers(0, 6), st.integers(-3, 3), st.sampled_from([1, 10, 100, 1000])).map(
            lambda t: 1000 * 1024 ** t[0] + t[1] * t[2]
        ),
    ),
    st.sampled_from(list(Format)),
)
def test_milli_values_print_as_their_fractions_do(milli: int, fmt: Format) -> None:
    """The integer path statuses and explanations print with agrees with the exact one everywhere."""
    assert format_milli(milli, fmt) == format_quantity(Fraction(milli, 1000), fmt)
