"""An Object or External metric's answer read into its value, a few thousand series per step.

An Object metric's value is the sum of its query's series; an External metric's reading holds every
series' value (the engine sums them as upstream does), in the order of their label sets, so that equal
answers give equal readings whatever order Prometheus lists their series in. A value that is not a number
(NaN, ±Inf) fails the metric, naming the series (the first by labels); so does an empty answer, an answer
that is neither an instant vector nor a scalar, and a sample stamped out of bounds
(:mod:`autoscaler.prometheus.sample_times`). A metric with ``ignoreNullValues`` (KEDA's) reads what KEDA's
Prometheus scaler reads as 0 as 0: an empty answer (one series of value 0, stamped at the evaluation time)
and a NaN or infinite value (``nulls_as_zero``); anything else fails it all the same.

Why in steps: an External query may select 200,000 series (27 MB). The answer is decoded a slice at a
time already (:mod:`autoscaler.prometheus.slicing`); reading it in one go (the conversion of every value,
a sort of every label set, then freeing the 200,000 decoded series) held the event loop for 3 s, and
``/healthz`` answered 2.7 s late. Here every pass over the series is a generator yielding every
:data:`STEP` series, which the reader runs with the loop's turns between
(:func:`~autoscaler.loop.turns.in_turns`):

1. each value converted and summed, the oldest and newest sample's times kept;
2. for an External metric, each series' labels made a sort key, and the keys sorted by a sample sort:
   each key put in its bucket of the keys' range (cut by a sorted sample of them), then each bucket,
   about a step's series, sorted, its values taken and its keys freed, a bucket a step;
3. the answer's decoded series freed (by the reader, :func:`~autoscaler.prometheus.results.emptied_in_steps`).

A failure (a value that is not a number, a sample out of bounds) is found in the first pass; naming its
series deterministically takes one more pass over the answer, and no keys are sorted.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from autoscaler.core.observation import ExternalReading, MetricFailure, ObjectReading
from autoscaler.prometheus.extract import describe
from autoscaler.prometheus.results import InstantResult, Series, rows
from autoscaler.prometheus.sample_times import SampleTimes
from autoscaler.prometheus.sample_values import milli_or_none

__all__ = [
    "STEP",
    "SeriesValues",
    "external_reading",
    "is_null",
    "label_key",
    "object_reading",
    "values_in_steps",
]

# Series handled per step: a few milliseconds of pure Python (a sort key is ~1.5 µs a series of 8 labels).
STEP = 2000
# Keys sampled per bucket of the sort (see values_in_steps): a bucket holds about a step's series.
_SAMPLED_PER_BUCKET = 4

_Keyed = list[tuple[str, int]]  # (the series' sort key, its value): a bucket


@dataclass(slots=True, init=False, unsafe_hash=True)
class SeriesValues:
    """What an answer's series come to: their values (milli) in their label sets' order (empty unless asked
    for), their sum, and the newest sample's time (the reading's)."""

    ordered: Final[tuple[int, ...]]
    total: Final[int]
    timestamp: Final[float]

    def __init__(self, ordered: tuple[int, ...], total: int, timestamp: float) -> None:
        self.ordered = ordered
        self.total = total
        self.timestamp = timestamp


def label_key(labels: Mapping[str, str]) -> str:
    """A string that sorts as the series' sorted ``(name, value)`` pairs do: each name and value followed by
    a NUL, which sorts below every other character (label names hold none; a value with one may sort
    otherwise, still the same way every time: equal keys are ordered by value)."""
    return "".join([f"{name}\x00{value}\x00" for name, value in sorted(labels.items())])


def values_in_steps(
    result: InstantResult,
    times: SampleTimes | None = None,
    reference: float = 0.0,
    *,
    ordered: bool = True,
    step: int = STEP,
    nulls_as_zero: bool = False,
) -> Generator[None, None, SeriesValues | MetricFailure]:
    """The values of an Object/External metric's answer (``ordered``: in their label sets' order, as an
    External reading holds them), or why it cannot be read; with ``times``, a sample stamped out of its
    bounds around ``reference`` (the query's evaluation time) fails it. ``nulls_as_zero`` (``ignoreNullValues``):
    an empty answer is one value 0 at ``reference``, a NaN or infinite value is 0. A generator that yields
    every ``step`` series (see the module's docstring)."""
    items: Sequence[Series]
    if result.result_type == "scalar" and result.scalar is not None:
        items = (result.scalar,)
    elif result.result_type == "vector":
        items = result.vector
    else:
        return MetricFailure(f"the query returned a {result.result_type}; it must return an instant vector or a scalar")
    count = len(items)
    if not count:
        if nulls_as_zero:  # KEDA: "the result is empty" is 0 with ignoreNullValues
            return SeriesValues((0,), 0, reference)
        return MetricFailure("the query returned no series (an empty result; stale or absent data)")
    big = count > step  # a small answer is read in one step, as it was decoded
    values: list[int] = []
    total = 0
    unusable = False
    oldest = newest = _first_time(items)
    for start in range(0, count, step):
        if start:
            yield
        for _, timestamp, text in rows(items, start, start + step):
            value = milli_or_none(text)
            if value is None:
                if not (nulls_as_zero and is_null(text)):
                    unusable = True
                    continue
                value = 0
            values.append(value)
            total += value
            if timestamp < oldest:
                oldest = timestamp
            elif timestamp > newest:
                newest = timestamp
    if unusable:
        return (yield from _unusable(items, step))
    if times is not None and not (times.within(oldest, reference) and times.within(newest, reference)):
        scalar = result.result_type == "scalar"
        return (yield from _out_of_bounds(items, times, reference, step, scalar))
    if not ordered:
        return SeriesValues((), total, newest)
    if count == 1:  # the usual answer (a sum): nothing to order
        return SeriesValues((total,), total, newest)
    if not big:
        keyed = [(label_key(labels), value) for labels, value in zip(_labels(items, 0, count), values, strict=True)]
        keyed.sort()
        return SeriesValues(tuple([value for _, value in keyed]), total, newest)
    # A sample sort: a few keys spread over the answer, sorted, cut the keys' range into buckets of about a
    # step's series each; each series goes to its bucket (a binary search among the cuts), and each bucket is
    # sorted, its values taken and its keys freed in a step of its own. One sort of every key, or a merge
    # of two sorted halves, is one call of 100-200 ms at 200,000 series (their keys scattered in memory).
    buckets = count // step + 1
    stride = max(1, count // (_SAMPLED_PER_BUCKET * buckets))
    sample = sorted([label_key(items[index].labels) for index in range(0, count, stride)])
    cuts = sample[_SAMPLED_PER_BUCKET::_SAMPLED_PER_BUCKET]
    filled: list[_Keyed] = [[] for _ in range(len(cuts) + 1)]
    for start in range(0, count, step):
        if big:
            yield
        for labels, value in zip(_labels(items, start, step), values[start : start + step], strict=True):
            key = label_key(labels)
            filled[bisect_right(cuts, key)].append((key, value))
    values = []  # not held across the turns to come
    in_order: list[int] = []
    for index in range(len(filled)):
        if big:
            yield
        bucket = filled[index]
        bucket.sort()
        in_order.extend([value for _, value in bucket])
        filled[index] = []  # its keys freed in this step
    return SeriesValues(tuple(in_order), total, newest)


def is_null(text: str) -> bool:
    """Whether a sample's value is what KEDA's ``ignoreNullValues`` reads as 0: NaN or ±Inf."""
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isnan(value) or math.isinf(value)


def _first_time(items: Sequence[Series]) -> float:
    for _, timestamp, _ in rows(items, 0, 1):
        return timestamp
    return 0.0


def _labels(items: Sequence[Series], start: int, step: int) -> list[Mapping[str, str]]:
    return [labels for labels, _, _ in rows(items, start, start + step)]


def _unusable(items: Sequence[Series], step: int) -> Generator[None, None, MetricFailure]:
    """The failure naming the first series (by labels) whose value is not a number."""
    first: tuple[str, Mapping[str, str], str] | None = None
    for start in range(0, len(items), step):
        if len(items) > step:
            yield
        for labels, _, text in rows(items, start, start + step):
            if milli_or_none(text) is None:
                key = label_key(labels)
                if first is None or key < first[0]:
                    first = (key, labels, text)
    assert first is not None
    _, labels, text = first
    where = f"series {describe(labels)}" if labels else "the scalar"
    return MetricFailure(f"{where} has value {text}, which is not a number the autoscaler can use")


def _out_of_bounds(
    items: Sequence[Series], times: SampleTimes, reference: float, step: int, scalar: bool
) -> Generator[None, None, MetricFailure]:
    """The failure naming the first series (by labels) whose sample is out of bounds."""
    first: tuple[str, Mapping[str, str], float] | None = None
    others = -1
    for start in range(0, len(items), step):
        if len(items) > step:
            yield
        for labels, timestamp, _ in rows(items, start, start + step):
            if not times.within(timestamp, reference):
                others += 1
                key = label_key(labels)
                if first is None or key < first[0]:
                    first = (key, labels, timestamp)
    assert first is not None
    _, labels, timestamp = first
    what = "the scalar" if scalar else f"the sample of series {describe(labels)}"
    if others:
        what += f" (and of {others} other series)"
    return MetricFailure(times.describe(what, timestamp, reference))


def object_reading(values: SeriesValues | MetricFailure) -> ObjectReading | MetricFailure:
    """An Object metric's reading: one value, the sum of the series' (upstream sums an External metric's)."""
    if isinstance(values, MetricFailure):
        return values
    return ObjectReading(value=values.total, timestamp=values.timestamp)


def external_reading(values: SeriesValues | MetricFailure) -> ExternalReading | MetricFailure:
    """An External metric's reading: every series' value, in their label sets' order (``ordered``)."""
    if isinstance(values, MetricFailure):
        return values
    return ExternalReading(values=values.ordered, timestamp=values.timestamp)
