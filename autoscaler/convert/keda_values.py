"""KEDA's readings of trigger metadata values, which are all strings (``pkg/scalers/scalersconfig/typed_config.go``):
booleans as Go's ``strconv.ParseBool``, durations as Go's ``time.ParseDuration`` or a number of milliseconds,
maps as ``key=value,key=value``, numbers as ``strconv.ParseFloat``. Each returns None after reporting a value KEDA
would refuse, so the converter never reads a value differently from KEDA."""

from __future__ import annotations

import re
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, Decimal, InvalidOperation

from autoscaler.convert.model import Conversion

GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")
_GO_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_UNIT_SECONDS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "μs": Decimal("1e-6"),
    "ms": Decimal("0.001"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}


def go_bool(value: object, where: str, conversion: Conversion) -> bool | None:
    text = str(value).strip()
    if text in GO_TRUE:
        return True
    if text in GO_FALSE:
        return False
    conversion.errors.append(f"{where}: {value!r} is not a boolean (KEDA refuses it)")
    return None


def annotation_bool(value: object) -> bool:
    """A KEDA pause annotation's value: ``strconv.ParseBool``, and anything it cannot parse counts as true."""
    return str(value).strip() not in GO_FALSE


def go_duration_seconds(value: object, where: str, conversion: Conversion) -> Decimal | None:
    """A Go duration (``1m30s``, ``500ms``) or, failing that, whole milliseconds (KEDA's ``timeout``)."""
    text = str(value).strip()
    if re.fullmatch(r"\d+", text):
        return Decimal(text) / 1000
    body = text[1:] if text.startswith("+") else text
    if body == "0":
        return Decimal(0)
    parts = _GO_DURATION_PART.findall(body)
    if not body or "".join(number + unit for number, unit in parts) != body:
        conversion.errors.append(f"{where}: {value!r} is neither a duration (30s, 1m) nor milliseconds")
        return None
    return sum((Decimal(number) * _GO_UNIT_SECONDS[unit] for number, unit in parts), Decimal(0))


def go_map(value: object, where: str, conversion: Conversion) -> dict[str, str] | None:
    """``key=value,key=value`` (each side trimmed), as KEDA reads customHeaders and queryParameters."""
    result: dict[str, str] = {}
    for item in str(value).split(","):
        pair = item.strip().split("=")
        if len(pair) != 2:
            conversion.errors.append(f"{where}: expected key=value pairs separated by commas, got {item.strip()!r}")
            return None
        result[pair[0].strip()] = pair[1].strip()
    return result


def number(value: object, where: str, conversion: Conversion) -> Decimal | None:
    try:
        parsed = Decimal(str(value).strip())
    except InvalidOperation:
        conversion.errors.append(f"{where}: {value!r} is not a number")
        return None
    if not parsed.is_finite():
        conversion.errors.append(f"{where}: {value!r} is not a finite number")
        return None
    return parsed


def milli_quantity(value: Decimal, *, truncate: bool = False) -> str:
    """A value as KEDA hands it to the HPA, at milli precision, written as a quantity: rounded as a trigger's
    threshold (``GetMetricTargetMili``), or truncated as the composite target (``int64(target * 1000)``)."""
    rounded = value.quantize(Decimal("0.001"), rounding=ROUND_DOWN if truncate else ROUND_HALF_EVEN)
    text = format(rounded, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text
