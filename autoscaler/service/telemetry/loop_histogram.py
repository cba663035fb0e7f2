"""A histogram observed on the event loop at every sync, without prometheus-client's locks.

prometheus-client's ``Histogram.observe`` walks the buckets in Python and takes two locks (the sum's and the
bucket's); a sync observes two histograms (its duration and its schedule lag), and at 10,000 targets they
showed in the service's profile (docs/benchmarks-history.md, "Typed records for the answers, quicker frozen
records, lock-free sync histograms"). A
:class:`LoopHistogram` is observed only on the event loop's thread: a bisection and two additions. The
scrape, rendered in a worker thread, collects it from a copy of its counts made in one step (a list copy
is one operation under the interpreter's lock), so every bucket and the count are of one moment; the sum
may lag the count by the observation being made, as prometheus-client's own may (its sum and bucket are
two locks).

It serves the same series as a ``Histogram`` with the same name, help and buckets (a test compares the
exposition), without the ``_created`` sample the service leaves out anyway.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence

from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

__all__ = ["LoopHistogram"]


class LoopHistogram:
    """A histogram without labels, observed on one thread and collected from any (register it in a
    ``CollectorRegistry``)."""

    __slots__ = ("_bounds", "_counts", "_documentation", "_labels", "_name")

    def __init__(self, name: str, documentation: str, buckets: Sequence[float]) -> None:
        bounds = sorted(float(b) for b in buckets)
        if not bounds or bounds[0] < 0 or len(set(bounds)) != len(bounds):
            raise ValueError("histogram buckets must be distinct and not negative")
        self._name, self._documentation = name, documentation
        self._bounds = tuple(b for b in bounds if b != float("inf"))
        self._labels = [floatToGoString(b) for b in self._bounds] + ["+Inf"]  # type: ignore[no-untyped-call]
        # The observations in each bucket (not cumulative; the last one past every bound), then their sum.
        self._counts: list[float] = [0.0] * (len(self._bounds) + 2)

    def observe(self, value: float) -> None:
        """One observation (``le`` is inclusive: a value equal to a bound is in that bound's bucket)."""
        counts = self._counts
        counts[bisect_left(self._bounds, value)] += 1.0
        counts[-1] += value

    def collect(self) -> Iterator[Metric]:
        counts = list(self._counts)  # one moment's counts (see the module's docstring)
        family = HistogramMetricFamily(self._name, self._documentation)
        cumulative: list[tuple[str, float]] = []
        total = 0.0
        for label, count in zip(self._labels, counts, strict=False):
            total += count
            cumulative.append((label, total))
        family.add_metric([], cumulative, counts[-1])
        yield family
