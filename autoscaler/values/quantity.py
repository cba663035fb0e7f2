"""Kubernetes resource quantities, parsed and printed exactly as apimachinery does.

A quantity is kept as an exact :class:`fractions.Fraction` (never a float), so ``1.5Gi``,
``500m`` and ``2e3`` round-trip without error. The rules follow
``k8s.io/apimachinery/pkg/api/resource`` (``quantity.go``, ``suffix.go``):

* grammar ``<sign><digits>[.<digits>]<suffix>`` where the suffix is one of the binary-SI
  suffixes ``Ki Mi Gi Ti Pi Ei``, the decimal-SI suffixes ``n u m "" k M G T P E``, or a
  decimal exponent ``e<int>`` / ``E<int>`` (``1E`` alone is exa, ``1E3`` is 1000);
* a value finer than one nano is rounded *up* (away from zero) to the next nano;
* binary-SI magnitudes are capped at 2^63 - 1 (decimal ones are not, as on master);
* ``MilliValue()`` rounds any sub-milli remainder up (away from zero);
* the canonical string keeps the format of the parsed suffix: decimal values print with the
  largest exponent that is a multiple of three and leaves an integer mantissa (``1500m``,
  ``2``, ``1500k``); binary values print in powers of 1024 when they are whole numbers of at
  least 1024 (``1536Mi``), otherwise they fall back to decimal.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

MAX_INT64 = 2**63 - 1
_NANO = Fraction(1, 10**9)

_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {exponent: suffix for suffix, exponent in _BINARY_SUFFIXES.items()}


class Format(enum.Enum):
    """How a quantity prints (apimachinery ``resource.Format``)."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def _round_up_to_nano(value: Fraction) -> Fraction:
    """Round the magnitude up to a whole number of nanos (inf.RoundUp, away from zero)."""
    scaled = abs(value) / _NANO
    if scaled.denominator == 1:
        return value
    magnitude = math.ceil(scaled) * _NANO
    return magnitude if value >= 0 else -magnitude


@dataclass(slots=True, init=False, unsafe_hash=True)
class Quantity:
    """An exact Kubernetes quantity with the format it prints in."""

    value: Final[Fraction]
    format: Final[Format]
    # milli_value() and as_float(), kept once computed: a metric target's are read every sync (the decision,
    # the service's own metrics), and Fraction is slow.
    _milli: int | None = field(init=False, repr=False, compare=False)
    _float: float | None = field(init=False, repr=False, compare=False)

    def __init__(self, value: Fraction, format: Format = Format.DECIMAL_SI) -> None:
        self.value = value
        self.format = format
        self._milli = None
        self._float = None

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse ``text`` as ``resource.ParseQuantity`` does; raise :class:`QuantityError`."""
        if not isinstance(text, str):
            raise QuantityError(f"quantity must be a string, not {type(text).__name__}")
        if not text:
            raise QuantityError(_FORMAT_ERROR)
        negative, num, denom, suffix, has_digits = _scan(text)
        base, exponent, fmt = _interpret_suffix(suffix)
        if not has_digits and _takes_slow_path(num, denom, base, exponent, fmt):
            # apimachinery's slow path hands the digit-less number part to inf.Dec, which refuses it.
            raise QuantityError("unable to parse numeric part of quantity")
        if len(num) + len(denom) > _MAX_DIGITS:
            raise QuantityError(f"quantity has {len(num) + len(denom):,} digits: at most {_MAX_DIGITS}")
        digits = Fraction(int(num + denom), 10 ** len(denom))
        magnitude = digits * Fraction(base) ** exponent
        # Round up to a whole nano (away from zero), as inf.RoundUp does on the magnitude.
        scaled = magnitude / _NANO
        if scaled.denominator != 1:
            magnitude = math.ceil(scaled) * _NANO
        if fmt is Format.BINARY_SI:
            # Only binary quantities are capped (quantity.go: "The max is just a simple cap").
            magnitude = min(magnitude, Fraction(MAX_INT64))
            if 0 < magnitude < 1:
                fmt = Format.DECIMAL_SI
        return cls(-magnitude if negative else magnitude, fmt)

    @classmethod
    def from_milli(cls, milli: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """``resource.NewMilliQuantity``."""
        return cls(Fraction(milli, 1000), fmt)

    @classmethod
    def from_int(cls, value: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """``resource.NewQuantity``."""
        return cls(Fraction(value), fmt)

    def milli_value(self) -> int:
        """``Quantity.MilliValue()``: value × 1000, any remainder rounded away from zero."""
        if self._milli is None:
            self._milli = _round_away_from_zero(self.value * 1000)
        assert self._milli is not None
        return self._milli

    def int_value(self) -> int:
        """``Quantity.Value()``: the value in base units, rounded away from zero."""
        return _round_away_from_zero(self.value)

    def as_float(self) -> float:
        """``Quantity.AsApproximateFloat64()``."""
        if self._float is None:
            self._float = float(self.value)
        assert self._float is not None
        return self._float

    def sign(self) -> int:
        return (self.value > 0) - (self.value < 0)

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


def _round_away_from_zero(value: Fraction) -> int:
    return math.ceil(value) if value >= 0 else math.floor(value)


_FORMAT_ERROR = (
    "expected a number with an optional suffix, such as 500m, 1.5Gi, 2e3 or 100k "
    "(quantities must match '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$')"
)
_SUFFIX_ERROR = "unknown suffix {!r} (valid: n u m k M G T P E, Ki Mi Gi Ti Pi Ei, or an exponent such as e3)"
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
# Decimal exponents beyond this are rejected rather than materialised (apimachinery would accept
# up to int32; no resource amount needs 10^1000).
_MAX_EXPONENT = 1000
# Likewise digits: Python will not read more than a few thousand into an int, and no amount needs 1000.
_MAX_DIGITS = 1000


def _scan(text: str) -> tuple[bool, str, str, str, bool]:
    """``parseQuantityString``: split sign, numerator, denominator and suffix.

    Mirrors the Go scanner character for character, including its leniency (``"."``, ``"+"``
    and a bare suffix such as ``"m"`` all read as zero).
    """
    pos, end = 0, len(text)
    negative = False
    if text[0] in "+-":
        negative = text[0] == "-"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    has_digits = pos > (1 if text[0] in "+-" else 0)
    if pos >= end:
        return negative, "0", "", "", has_digits
    start = pos
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    num = text[start:pos] or "0"
    has_digits = has_digits or pos > start
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos].isascii() and text[pos].isdigit():
            pos += 1
        denom = text[start:pos]
        has_digits = has_digits or pos > start
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    if pos < end:
        raise QuantityError(_FORMAT_ERROR)
    return negative, num, denom, text[suffix_start:], has_digits


def _interpret_suffix(suffix: str) -> tuple[int, int, Format]:
    """``suffixHandler.interpret``: (base, exponent, format) of a suffix."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], Format.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT_DIGITS.match(suffix[1:]):
        # Compared as text first: int() refuses thousands of digits.
        if len(suffix) > 12 or abs(int(suffix[1:])) > _MAX_EXPONENT:
            raise QuantityError(f"quantity exponent {suffix[1:]:.12} is out of range (at most ±{_MAX_EXPONENT})")
        power = int(suffix[1:])
        return 10, power, Format.DECIMAL_EXPONENT
    raise QuantityError(_SUFFIX_ERROR.format(suffix))


_EXPONENT_DIGITS = re.compile(r"^[-+]?[0-9]+$")


def _takes_slow_path(num: str, denom: str, base: int, exponent: int, fmt: Format) -> bool:
    """Whether ParseQuantity falls back to inf.Dec (which needs real digits)."""
    if fmt is Format.BINARY_SI:
        if exponent < 0 or denom:
            return True
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        precision = 18 - (len(num) + len(denom))
    if precision < 0:
        return True
    scale = (0 if fmt is Format.BINARY_SI else exponent) - len(denom)
    if scale < -9:
        return True
    value = int(num + denom) * (2**exponent if fmt is Format.BINARY_SI else 1)
    return value > MAX_INT64


def parse_quantity(text: str) -> Quantity:
    """Shorthand for :meth:`Quantity.parse`."""
    return Quantity.parse(text)


def format_quantity(value: Fraction, fmt: Format = Format.DECIMAL_SI) -> str:
    """The canonical string of ``value`` (``Quantity.String()``)."""
    value = _round_up_to_nano(value)
    if value == 0:
        return "0"
    if fmt is Format.BINARY_SI:
        if -1024 < value < 1024 or value.denominator != 1:
            fmt = Format.DECIMAL_SI
        else:
            return _format_binary(int(value))
    # Exact: after nano rounding, value × 10^9 is an integer.
    return _format_decimal(value < 0, int(abs(value) * 10**9), -9, fmt)


def format_milli(milli: int, fmt: Format = Format.DECIMAL_SI) -> str:
    """:func:`format_quantity` of ``milli`` thousandths (``resource.NewMilliQuantity(milli, fmt).String()``),
    in integers: a status and an explanation print a few per sync, and the fractions cost ~40 µs each."""
    if milli == 0:
        return "0"
    if fmt is Format.BINARY_SI:
        if -1_024_000 < milli < 1_024_000 or milli % 1000:
            fmt = Format.DECIMAL_SI
        else:
            return _format_binary(milli // 1000)
    return _format_decimal(milli < 0, abs(milli), -3, fmt)


def _format_decimal(negative: bool, mantissa: int, exponent: int, fmt: Format) -> str:
    """``mantissa`` × 10^``exponent`` (mantissa > 0), with the largest exponent that is a multiple of
    three and leaves an integer mantissa."""
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    mantissa *= 10**shift
    exponent -= shift
    if fmt is Format.DECIMAL_EXPONENT:
        suffix = "" if exponent == 0 else f"e{exponent}"
    else:
        suffix = _DECIMAL_BY_EXPONENT.get(exponent, f"e{exponent}")
    return f"{'-' if negative else ''}{mantissa}{suffix}"


def _format_binary(value: int) -> str:
    sign = "-" if value < 0 else ""
    mantissa = abs(value)
    exponent = 0
    while mantissa % 1024 == 0 and exponent < 60:
        mantissa //= 1024
        exponent += 10
    return f"{sign}{mantissa}{_BINARY_BY_EXPONENT.get(exponent, '')}"


def milli_from_decimal_text(text: str, *, truncate_to_nano: bool = False) -> int:
    """Milli value of a plain decimal number as Prometheus prints it (``"0.3"``, ``"1e-3"``).

    Exact (no float on the way), rounded up as ``MilliValue()`` rounds. ``truncate_to_nano`` first
    drops anything below one nano, as metrics-server's integer nanocores do: a CPU rate computed in
    float64 as 0.25000000000000006 then reads 250m, like upstream, not 251m. Raises ``ValueError``
    for NaN and infinities: those are not values the engine may see.
    """
    lowered = text.strip().lower()
    if lowered in {"nan", "+inf", "-inf", "inf", "+nan", "-nan"}:
        raise ValueError(f"not a finite number: {text!r}")
    try:
        exact = Fraction(lowered)
    except (ValueError, ZeroDivisionError) as exc:
        raise ValueError(f"not a number: {text!r}") from exc
    if truncate_to_nano:
        nanos = exact * 10**9
        exact = Fraction(math.floor(nanos) if nanos >= 0 else math.ceil(nanos), 10**9)
    return _round_away_from_zero(exact * 1000)
