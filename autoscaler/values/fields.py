"""Reading untrusted YAML/JSON into typed values while collecting every error with its path.

Parsers walk a document with :class:`Obj` views. Each read records what is wrong (wrong type,
out of range, required, unsupported value) against the field's full path and carries on, so one
run reports every violation at once; :meth:`Obj.finish` flags unknown fields with a "did you
mean" hint. Nothing here raises anything but :class:`SpecError`.

Why not pydantic: its model validators do not run once a field fails, so cross-field rules
(``maxReplicas`` ≥ ``minReplicas``, Utilization only on Resource metrics) would be reported one
round at a time; and its messages would need rewriting into Kubernetes' wording anyway.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

from autoscaler.values.quantity import Quantity, QuantityError

E = TypeVar("E")

REQUIRED = "Required value"
MAX_FLOAT_INTEGER = 2**1023  # integers beyond this do not fit in a float
# A quantity's milli-value is an int64 where the API and the HPA use it (a metric's value, a target).
MAX_INT64 = 2**63 - 1
MAX_MILLI = MAX_INT64


@dataclass(frozen=True, slots=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message  # no path: the whole document


class SpecError(ValueError):
    """One or more fields are invalid. ``errors`` lists them all, in document order."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        self.errors = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


MAX_REPORTED = 100  # problems printed; a list of thousands of bad values is summed up after these


def problem_report(source: str, error: SpecError, limit: int = MAX_REPORTED) -> str:
    """What the command line prints for ``error`` in ``source``: a count, then one problem a line."""
    count = len(error.errors)
    lines = [f"{source}: invalid ({count} problem{'s' if count != 1 else ''}):"]
    lines += [f"  {item}" for item in error.errors[:limit]]
    if count > limit:
        lines.append(f"  … and {count - limit} more")
    return "\n".join(lines)


class ErrorList:
    """Collects :class:`FieldError`s during one parse."""

    def __init__(self) -> None:
        self.items: list[FieldError] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(FieldError(path, message))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise SpecError(self.items)


def did_you_mean(name: str, candidates: Sequence[str]) -> str | None:
    """The candidate closest to a misspelled ``name``, if any is close enough."""
    lowered = {c.lower(): c for c in candidates}
    if name.lower() in lowered:
        return lowered[name.lower()]
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    if not matches:
        matches = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
        matches = [lowered[m] for m in matches]
    return matches[0] if matches else None


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def quoted_list(values: Sequence[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


class Obj:
    """A view of one mapping in the document, at ``path``."""

    def __init__(self, value: Mapping[str, Any], path: str, errors: ErrorList) -> None:
        self.value = value
        self.path = path
        self.errors = errors
        self._known: list[str] = []

    @classmethod
    def of(cls, value: object, path: str, errors: ErrorList) -> Obj | None:
        """A view of ``value``, or None (with an error) when it is not a mapping."""
        if isinstance(value, Mapping):
            return cls(value, path, errors)
        if not path:  # the whole document
            errors.add(
                path,
                "the document is empty, where an object was expected"
                if value is None
                else f"the document must be an object, not {type_name(value)}",
            )
        else:
            errors.add(path, f"must be an object, not {type_name(value)}")
        return None

    def at(self, key: str) -> str:
        shown = key or '""'  # an empty key, visible in a path
        return f"{self.path}.{shown}" if self.path else shown

    def error(self, key: str, message: str) -> None:
        self.errors.add(self.at(key), message)

    def mark_known(self, *keys: str) -> None:
        """Accept ``keys`` without reading them through this view."""
        self._known.extend(keys)

    def has(self, key: str) -> bool:
        return self.value.get(key) is not None

    def raw(self, key: str, *, required: bool = False) -> Any:
        """The value at ``key`` (None when absent or null), marking ``key`` as known."""
        self._known.append(key)
        value = self.value.get(key)
        if value is None and required:
            self.error(key, REQUIRED)
        return value

    def obj(self, key: str, *, required: bool = False) -> Obj | None:
        value = self.raw(key, required=required)
        if value is None:
            return None
        return Obj.of(value, self.at(key), self.errors)

    def items(self, key: str, *, required: bool = False) -> Iterator[tuple[str, Any]]:
        """``(path, element)`` for each element of the list at ``key``."""
        value = self.raw(key, required=required)
        if value is None:
            return
        if not isinstance(value, list | tuple):
            self.error(key, f"must be a list, not {type_name(value)}")
            return
        for index, element in enumerate(value):
            yield f"{self.at(key)}[{index}]", element

    def string(
        self,
        key: str,
        *,
        required: bool = False,
        default: str | None = None,
        choices: Sequence[str] | None = None,
        non_empty: bool = False,
    ) -> str | None:
        value = self.raw(key, required=required)
        if value is None:
            return default
        if not isinstance(value, str):
            self.error(key, f"must be a string, not {type_name(value)}")
            return None
        if non_empty and not value:
            self.error(key, REQUIRED)
            return None
        if choices is not None and value not in choices:
            hint = did_you_mean(value, choices)
            suffix = f' (did you mean "{hint}"?)' if hint else ""
            self.error(key, f'Unsupported value: "{value}": supported values: {quoted_list(choices)}{suffix}')
            return None
        return value

    def integer(
        self,
        key: str,
        *,
        required: bool = False,
        default: int | None = None,
        minimum: int | None = None,
        maximum: int | None = None,
    ) -> int | None:
        value = self.raw(key, required=required)
        if value is None:
            return default
        if isinstance(value, float) and value.is_integer() and math.isfinite(value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(key, f"must be an integer, not {type_name(value)}")
            return None
        # Every integer of these documents is an int64 (or narrower) in the API: that is the widest range.
        problem = (
            range_problem(value, minimum, maximum)
            or range_problem(value, None, MAX_INT64)
            or range_problem(value, -MAX_INT64 - 1, None)
        )
        if problem:
            self.error(key, problem)
            return None
        return value

    def number(
        self,
        key: str,
        *,
        required: bool = False,
        default: float | None = None,
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> float | None:
        """A plain (float) number: settings and scenario times."""
        value = self.raw(key, required=required)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.error(key, f"must be a number, not {type_name(value)}")
            return None
        # An integer YAML reads exactly may be too large for a float: compared as it is, it fails the
        # range (when there is one) with the range's message; else it is out of any float's range.
        problem = range_problem(value, minimum, maximum)
        unbounded = abs(value) > MAX_FLOAT_INTEGER if isinstance(value, int) else not math.isfinite(value)
        if problem is None and unbounded:
            problem = "must be a finite number"
        if problem:
            self.error(key, problem)
            return None
        return float(value)

    def boolean(self, key: str, *, required: bool = False, default: bool | None = None) -> bool | None:
        value = self.raw(key, required=required)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error(key, f"must be true or false, not {type_name(value)}")
            return None
        return value

    def quantity(
        self, key: str, *, required: bool = False, positive: bool = False, non_negative: bool = False
    ) -> Quantity | None:
        value = self.raw(key, required=required)
        if value is None:
            return None
        quantity = to_quantity(value, self.at(key), self.errors)
        if quantity is None:
            return None
        if positive and quantity.sign() <= 0:
            self.error(key, "must be positive")
            return None
        if non_negative and quantity.sign() < 0:
            self.error(key, "must be greater than or equal to 0")
            return None
        return quantity

    def finish(self) -> None:
        """Report keys that no read asked for, with a hint when one is a near miss."""
        known = list(dict.fromkeys(self._known))
        for key in self.value:
            if key in known:
                continue
            name = str(key)
            hint = did_you_mean(name, known)
            suffix = f' (did you mean "{hint}"?)' if hint else ""
            self.errors.add(self.at(name), f"unknown field{suffix}")


def range_problem(value: float, minimum: float | None, maximum: float | None) -> str | None:
    def show(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else str(x)

    if minimum is not None and maximum is not None and not minimum <= value <= maximum:
        return f"must be between {show(minimum)} and {show(maximum)}"
    if minimum is not None and value < minimum:
        return f"must be greater than or equal to {show(minimum)}"
    if maximum is not None and value > maximum:
        return f"must be less than or equal to {show(maximum)}"
    return None


def to_quantity(value: object, path: str, errors: ErrorList) -> Quantity | None:
    """A quantity from a string (``"500m"``) or a plain number, as the API server accepts both."""
    if isinstance(value, bool):
        errors.add(path, 'must be a quantity (a string such as "500m" or "1.5Gi", or a number), not boolean')
        return None
    if isinstance(value, int):
        return _within_int64(Quantity(Fraction(value)), path, errors)
    if isinstance(value, float):
        if not math.isfinite(value):
            errors.add(path, "must be a finite quantity")
            return None
        value = repr(value)
    if not isinstance(value, str):
        errors.add(path, f'must be a quantity (a string such as "500m" or "1.5Gi"), not {type_name(value)}')
        return None
    try:
        quantity = Quantity.parse(value)
    except QuantityError as exc:
        errors.add(path, f"invalid quantity {value!r:.100}: {exc}")
        return None
    return _within_int64(quantity, path, errors)


def _within_int64(quantity: Quantity, path: str, errors: ErrorList) -> Quantity | None:
    milli = quantity.milli_value()
    if milli > MAX_MILLI:
        errors.add(path, f"must be at most {MAX_MILLI}m (a milli-value fits in 64 bits)")
        return None
    if milli < -MAX_MILLI:
        errors.add(path, f"must be at least -{MAX_MILLI}m (a milli-value fits in 64 bits)")
        return None
    return quantity
