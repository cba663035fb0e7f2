"""A sample's value as Prometheus prints it, converted to the engine's exact milli units.

Apart from :mod:`autoscaler.prometheus.extract` because it is the one conversion every per-pod sample goes
through (hundreds of thousands a period at 10,000 targets), with its own argument for being exact.
"""

from __future__ import annotations

from mypy_extensions import i64

from autoscaler.native import is_extension
from autoscaler.values.quantity import milli_from_decimal_text

__all__ = ["milli_or_none"]

# Which way a plain decimal is read first: digit by digit where this module runs compiled, through a float
# where it runs as Python, each the cheaper there (docs/compiled-boundary.md). Either way the result is the
# exact one (tests check both ways against the exact conversion).
_DIGITS_FIRST = is_extension(__file__)

_POWERS_OF_TEN: tuple[int, ...] = (1, 10, 100, 1000)  # 10**k
_GUARD = 1e-14  # see milli_or_none: how far from a boundary, relative to the value, a float read may decide


def milli_or_none(text: str, truncate_to_nano: bool = False) -> int | None:
    """The exact milli value of a sample, or None for NaN/±Inf (and anything unparsable).

    Same result as :func:`milli_from_decimal_text` (tests check it). A batched sync converts hundreds of
    thousands of values a period, most of them rates printed with 15-17 digits ("0.012345678901234567"):
    compiled, a plain decimal is read digit by digit (:func:`plain_milli`) and any other text exactly
    (:func:`_exact_milli`); as Python, every text as :func:`through_float` reads it."""
    if _DIGITS_FIRST:
        milli = plain_milli(text, truncate_to_nano)
        if milli >= 0:
            return milli
        return _exact_milli(text, truncate_to_nano)
    return through_float(text, truncate_to_nano)


def plain_milli(text: str, truncate_to_nano: bool) -> int:
    """The exact milli value of a plain non-negative decimal ("0.3", "12", "1.", "0.30000000000000004"),
    read digit by digit as ``MilliValue()`` rounds it (up, when any digit past the third place is not zero;
    with ``truncate_to_nano`` only the first nine places count); -1 for any other text (a sign, an exponent,
    NaN, a digit that is not ASCII, more than 15 whole digits), which the caller converts otherwise."""
    length: i64 = len(text)
    index: i64 = 0
    milli: i64 = 0
    while index < length:
        code: i64 = ord(text[index])
        if code == 46:  # "."
            break
        if code < 48 or code > 57 or index == 15:  # not a digit, or the value might not fit 64 bits in milli
            return -1
        milli = milli * 10 + code - 48
        index += 1
    if index == 0:
        return -1  # no whole part (".5", "", "NaN"): the exact conversion decides
    index += 1  # past the point, if there is one
    places_end: i64 = index + 3
    counted_end: i64 = index + 9 if truncate_to_nano else length
    round_up = False
    while index < length:
        code = ord(text[index])
        if code < 48 or code > 57:
            return -1
        if index < places_end:
            milli = milli * 10 + code - 48
        elif code != 48 and index < counted_end:
            round_up = True
        index += 1
    while index < places_end:  # fewer than three places
        milli *= 10
        index += 1
    return milli + 1 if round_up else milli


def through_float(text: str, truncate_to_nano: bool = False) -> int | None:
    """:func:`milli_or_none` read through a float when that cannot change the answer, and exactly
    otherwise (:func:`_exact_milli`): what the service runs as Python.

    Why the float is safe: ``float(text)`` is the double nearest the text's decimal value ``t``, so
    ``scaled`` is within ``2**-52 * scaled`` of ``1000 t`` (two roundings of at most 2**-53 each). When
    ``scaled`` is more than ``_GUARD * scaled`` (45 times that) away from every integer, ``1000 t``
    lies strictly between the same two integers, and rounding up (``MilliValue()`` rounds away from zero;
    ``t`` is positive here) gives the one above. With ``truncate_to_nano`` the value is cut below a nano
    first, which rounds up only when ``1000 t``'s fraction is at least 1e-6: the fraction must then also be
    that far from 1e-6 (the float 1e-6 is within 1e-22 of it, far inside the guard from 1e-3 up). A value
    near either (a whole milli: "0.3", "250", "0"), tiny, huge, negative, written without a point or not a
    number at all is converted exactly.
    """
    if "." in text:
        try:
            scaled = float(text) * 1000.0
        except ValueError:
            scaled = 0.0  # not a float: the exact conversion says what it is
        if 1e-3 <= scaled < 1e12:  # NaN is neither
            whole = int(scaled)
            fraction = scaled - whole  # exact: whole <= scaled < 2 * whole (or whole is 0)
            guard = scaled * _GUARD
            if guard < fraction < 1.0 - guard:
                if not truncate_to_nano:
                    return whole + 1
                if not -guard <= fraction - 1e-6 <= guard:
                    return whole + 1 if fraction > 1e-6 else whole
    return _exact_milli(text, truncate_to_nano)


def _exact_milli(text: str, truncate_to_nano: bool) -> int | None:
    """:func:`milli_or_none` without a float, with an integer-only fast path for plain decimals ("0.3",
    "104857600"): ``Fraction`` costs ~7 µs a value. The whole part and three places are read as one
    integer; any other digit but zero past them rounds away from zero, as ``MilliValue()`` does."""
    whole, _, fraction = text.partition(".")
    if whole.isdigit() and text.isascii():
        if not fraction:
            return int(whole) * 1000
        if fraction.isdigit():
            if truncate_to_nano:
                fraction = fraction[:9]
            places = len(fraction)
            if places <= 3:
                return int(whole + fraction) * _POWERS_OF_TEN[3 - places]
            milli = int(whole + fraction[:3])
            return milli + 1 if len(fraction.rstrip("0")) > 3 else milli  # a digit past the third: round up
    elif whole[:1] == "-" and whole[1:].isdigit():
        positive = _exact_milli(text[1:], truncate_to_nano)
        return None if positive is None else -positive
    try:
        return milli_from_decimal_text(text, truncate_to_nano=truncate_to_nano)
    except ValueError:
        return None
