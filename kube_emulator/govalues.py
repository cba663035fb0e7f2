"""Values printed the way the API server (a Go program) prints them in its messages.

Field errors show the offending value with Go's ``fmt``: strings quoted by ``strconv.Quote`` (``%q``),
numbers and booleans with ``%v``, anything else with ``%#v`` (``map[string]interface {}{"a":"b"}``). A
custom resource's values are "unstructured" Go values (``int64``, ``float64``, ``string``, ``bool``,
``map[string]interface {}``, ``[]interface {}``), which is what :func:`go_syntax` assumes.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}


def quote(text: str) -> str:
    """``strconv.Quote``: double quotes, Go escapes, printable Unicode kept as is."""
    out = ['"']
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


def go_float(value: float) -> str:
    """``%v`` of a float64: the shortest digits, in exponent form below 1e-4 or from 1e6 on (``%g``)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(str(digit) for digit in digits)
    point = len(mantissa) + exponent  # digits before the decimal point
    decimal_exponent = point - 1
    prefix = "-" if sign else ""
    if decimal_exponent < -4 or decimal_exponent >= 6:
        head, tail = mantissa[0], mantissa[1:]
        body = f"{head}.{tail}" if tail else head
        return f"{prefix}{body}e{'+' if decimal_exponent >= 0 else '-'}{abs(decimal_exponent):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{mantissa}"
    if point >= len(mantissa):
        return f"{prefix}{mantissa}{'0' * (point - len(mantissa))}"
    return f"{prefix}{mantissa[:point]}.{mantissa[point:]}"


def go_simple(value: Any) -> str | None:
    """``%v`` of a number or boolean, ``%q`` of a string, or ``None`` for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return quote(value)
    return None


def go_syntax(value: Any) -> str:
    """``%#v`` of an unstructured value (maps print their keys sorted, as Go's fmt does)."""
    if value is None:
        return "interface {}(nil)"
    simple = go_simple(value)
    if simple is not None:
        return simple
    if isinstance(value, dict):
        entries = ", ".join(f"{quote(str(key))}:{go_syntax(value[key])}" for key in sorted(value))
        return f"map[string]interface {{}}{{{entries}}}"
    if isinstance(value, list | tuple):
        return f"[]interface {{}}{{{', '.join(go_syntax(item) for item in value)}}}"
    return quote(str(value))


def string_map(value: dict[str, Any]) -> str:
    """``%#v`` of a ``map[string]string`` (labels, selectors' matchLabels)."""
    entries = ", ".join(f"{quote(str(key))}:{quote(str(value[key]))}" for key in sorted(value))
    return f"map[string]string{{{entries}}}"


def field_value(value: Any) -> str:
    """How ``field.Error.ErrorBody`` shows an unstructured bad value: ``null`` quoted, simple values with
    ``%v``/``%q``, the rest with ``%#v``."""
    if value is None:
        return '"null"'
    return go_syntax(value)
