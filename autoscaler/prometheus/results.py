"""Results of the Prometheus HTTP API, parsed from its JSON envelope.

Values stay Prometheus' own text (``"0.3"``, ``"NaN"``, ``"+Inf"``): converting them is the
reader's job, exactly and without a float (:func:`autoscaler.values.quantity.milli_from_decimal_text`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, overload

import orjson

from autoscaler.prometheus.errors import PrometheusMalformedResponse

# Which series of an answer the caller wants (by labels); the others may be left out while parsing.
SeriesFilter = Callable[[Mapping[str, str]], bool]


class Series(NamedTuple):
    """One element of an instant vector (or the single value of a scalar, with no labels). A decoded
    answer keeps its series as a :class:`Vector`'s columns and makes these when they are asked for."""

    labels: Mapping[str, str]
    timestamp: float
    value: str


_Row = tuple[Mapping[str, str], float, str]


class Vector(Sequence[Series]):
    """An instant vector's series, kept as three columns (labels, timestamps, values); a :class:`Series`
    is made when one is asked for. The hot path reads the columns with :meth:`rows`.

    Why columns: a batched answer holds 100,000 series for as long as it is read, which spans turns of
    the loop and so young collections of the cyclic garbage collector. A ``Series`` (a tuple subclass)
    stays in the collector's lists for life and was walked again by each collection of generation 1
    (a large share of what it walked at 10,000 targets: docs/benchmarks-history.md, "The collector's walk
    cut"); the columns are three lists, and their
    elements (flat label dicts, floats, strings) are not tracked by it at all."""

    __slots__ = ("labels", "timestamps", "values")
    __hash__ = None  # type: ignore[assignment]  # mutable while it is built

    def __init__(self) -> None:
        self.labels: list[Mapping[str, str]] = []
        self.timestamps: list[float] = []
        self.values: list[str] = []

    @classmethod
    def of(cls, series: Iterable[Series]) -> Vector:
        vector = cls()
        for labels, timestamp, value in series:
            vector.labels.append(labels)
            vector.timestamps.append(timestamp)
            vector.values.append(value)
        return vector

    def rows(self, start: int = 0, stop: int | None = None) -> Iterator[_Row]:
        """``(labels, timestamp, value)`` of the series from ``start`` to ``stop`` (no :class:`Series` made)."""
        return zip(self.labels[start:stop], self.timestamps[start:stop], self.values[start:stop], strict=True)

    def __len__(self) -> int:
        return len(self.values)

    @overload
    def __getitem__(self, index: int) -> Series: ...
    @overload
    def __getitem__(self, index: slice) -> Vector: ...
    def __getitem__(self, index: int | slice) -> Series | Vector:
        if isinstance(index, slice):
            part = Vector()
            part.labels, part.timestamps, part.values = self.labels[index], self.timestamps[index], self.values[index]
            return part
        return Series(self.labels[index], self.timestamps[index], self.values[index])

    def __iter__(self) -> Iterator[Series]:
        make = tuple.__new__
        for row in zip(self.labels, self.timestamps, self.values, strict=True):
            yield make(Series, row)

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same series (a tuple of :class:`Series` among them)."""
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __repr__(self) -> str:
        return f"Vector({list(self)!r})"


def rows(vector: Sequence[Series], start: int = 0, stop: int | None = None) -> Iterable[_Row]:
    """``(labels, timestamp, value)`` of ``vector``'s series from ``start`` to ``stop``, from the columns of a
    :class:`Vector` or from any other sequence of :class:`Series` (a test's tuple)."""
    if isinstance(vector, Vector):
        return vector.rows(start, stop)
    return vector[start:stop]


def emptied_in_steps(vector: Sequence[Series], step: int = 2000) -> Generator[None, None, None]:
    """Free a decoded :class:`Vector`'s series a ``step`` at a time, yielding between (run with the loop's
    turns between, :mod:`autoscaler.loop.turns`): freeing 200,000 label sets at once, when the last
    reference to a large answer goes, held the event loop for ~80 ms. The vector is empty afterwards; any
    other sequence (a test's tuple) is left as it is."""
    if not isinstance(vector, Vector):
        return
    labels, timestamps, values = vector.labels, vector.timestamps, vector.values
    while len(labels) > step:
        del labels[-step:], timestamps[-step:], values[-step:]
        yield
    labels.clear()
    timestamps.clear()
    values.clear()


@dataclass(frozen=True, slots=True)
class RangeSeries:
    labels: Mapping[str, str]
    points: tuple[tuple[float, str], ...]


@dataclass(frozen=True, slots=True)
class InstantResult:
    """``result_type`` is ``vector``, ``scalar``, ``string`` or ``matrix`` (a range selector
    evaluated as an instant query). ``vector`` holds the series of a vector; ``scalar`` the value
    of a scalar or string result. ``left_out`` counts the series a :data:`SeriesFilter` left out of
    ``vector`` (they were in the answer); ``sunk`` how many series went to the caller's
    :class:`~autoscaler.prometheus.slicing.SeriesSink` instead (``vector`` is then empty), None when
    none was used. ``warnings`` are the envelope's ``warnings`` (Thanos lists the stores that did not
    answer there) and ``partial`` its ``isPartial`` (a VictoriaMetrics cluster sets it when a storage
    node did not answer): see :mod:`autoscaler.prometheus.partial`."""

    result_type: str
    vector: Sequence[Series] = ()  # a Vector when decoded from an answer
    scalar: Series | None = None
    warnings: tuple[str, ...] = field(default=())
    left_out: int = 0
    partial: bool = False
    sunk: int | None = None


@dataclass(frozen=True, slots=True)
class RangeResult:
    series: tuple[RangeSeries, ...]
    warnings: tuple[str, ...] = ()
    partial: bool = False


@dataclass(frozen=True, slots=True)
class Envelope:
    """What a ``status: success`` answer says around its result."""

    data: Mapping[str, Any]
    warnings: tuple[str, ...] = ()
    partial: bool = False


def _fail(what: str) -> PrometheusMalformedResponse:
    return PrometheusMalformedResponse(f"malformed Prometheus response: {what}")


def success_data(document: object) -> Envelope:
    """``data``, ``warnings`` and ``isPartial`` of a ``status: success`` envelope."""
    if not isinstance(document, Mapping):
        raise _fail("not a JSON object")
    if document.get("status") != "success":
        raise _fail(f"status is {document.get('status')!r}, not 'success'")
    data = document.get("data")
    if not isinstance(data, Mapping):
        raise _fail("no 'data' object")
    raw_warnings = document.get("warnings") or ()
    if not isinstance(raw_warnings, list | tuple):
        raise _fail("'warnings' is not a list")
    partial = document.get("isPartial", False)
    if not isinstance(partial, bool):
        raise _fail(f"'isPartial' is {partial!r}, not true or false")
    return Envelope(data, tuple(str(w) for w in raw_warnings), partial)


def _labels(raw: object) -> Mapping[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise _fail("a series' 'metric' is not an object of strings")
    return raw


def _point(raw: object) -> tuple[float, str]:
    if (
        not isinstance(raw, list | tuple)
        or len(raw) != 2
        or isinstance(raw[0], bool)
        or not isinstance(raw[0], int | float)
        or not isinstance(raw[1], str)
    ):
        raise _fail(f'a sample is not [<time>, "<value>"]: {str(raw)[:80]}')
    return float(raw[0]), raw[1]


def parse_instant(document: object) -> InstantResult:
    envelope = success_data(document)
    data, warnings, partial = envelope.data, envelope.warnings, envelope.partial
    result_type = data.get("resultType")
    result = data.get("result")
    if result_type == "vector":
        if not isinstance(result, list):
            raise _fail("vector result is not a list")
        return InstantResult("vector", vector=vector_of(result), warnings=warnings, partial=partial)
    if result_type in ("scalar", "string"):
        timestamp, value = _point(result)
        return InstantResult(result_type, scalar=Series({}, timestamp, value), warnings=warnings, partial=partial)
    if result_type == "matrix":
        return InstantResult("matrix", warnings=warnings, partial=partial)
    raise _fail(f"unknown resultType {result_type!r}")


def vector_of(result: list[Any], into: Vector | None = None) -> Vector:
    """The series of a decoded ``result`` array, appended to ``into`` (a new :class:`Vector` if None)."""
    # The hot loop of a batched sync (tens of thousands of elements): checks are kept to what would
    # otherwise let a wrong type through silently. A series' three fields are checked before any is
    # appended, so the columns stay aligned when an element is refused.
    vector = Vector() if into is None else into
    labels_of, timestamps, values = vector.labels.append, vector.timestamps.append, vector.values.append
    try:
        for item in result:
            labels = item.get("metric", NO_LABELS)
            timestamp, value = item["value"]
            if type(value) is not str or type(labels) is not dict or isinstance(timestamp, bool):
                raise TypeError
            timestamp = float(timestamp)
            labels_of(labels)
            timestamps(timestamp)
            values(value)
    except (AttributeError, KeyError, TypeError, ValueError):
        raise _fail(
            f'a vector element is not {{"metric": {{…}}, "value": [<time>, "<value>"]}}: {str(item)[:120]}'
        ) from None
    return vector


NO_LABELS: dict[str, str] = {}  # the labels of a series without "metric" (never modified)


def load_answer(payload: bytes | bytearray) -> object:
    try:
        return orjson.loads(payload)
    except ValueError:
        raise _fail(f"not JSON: {payload[:120]!r}") from None


def parse_range(document: object) -> RangeResult:
    envelope = success_data(document)
    data = envelope.data
    if data.get("resultType") != "matrix":
        raise _fail(f"range query returned resultType {data.get('resultType')!r}, not 'matrix'")
    result = data.get("result")
    if not isinstance(result, list):
        raise _fail("matrix result is not a list")
    series = []
    for item in result:
        if not isinstance(item, dict) or not isinstance(item.get("values"), list):
            raise _fail("a matrix element has no 'values' list")
        points = tuple(_point(p) for p in item["values"])
        series.append(RangeSeries(_labels(item.get("metric", {})), points))
    return RangeResult(tuple(series), envelope.warnings, envelope.partial)
