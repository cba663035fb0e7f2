"""The service's and Prometheus' /metrics, parsed: sums, labels, and histograms between two scrapes."""

from __future__ import annotations

import math
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse_metrics(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def total(samples: Samples, name: str, **match: str) -> float:
    return sum(
        v
        for (n, labels), v in samples.items()
        if n == name and all(dict(labels).get(k) == want for k, want in match.items())
    )


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for (n, labels), value in samples.items():
        if n == name:
            key = dict(labels).get(label, "")
            out[key] = out.get(key, 0.0) + value
    return out


@dataclass
class Histogram:
    """Cumulative bucket counts (a delta between two scrapes)."""

    buckets: list[tuple[float, float]]  # (le, cumulative count), +Inf last
    count: float
    sum: float

    @classmethod
    def delta(cls, before: Samples, after: Samples, name: str, **match: str) -> Histogram:
        """The histogram ``name`` (its series whose labels include ``match``) between two scrapes."""

        def buckets(samples: Samples) -> dict[float, float]:
            out: dict[float, float] = {}
            for (n, labels), v in samples.items():
                found = dict(labels)
                if n == f"{name}_bucket" and all(found.get(k) == want for k, want in match.items()):
                    out[float(found["le"])] = out.get(float(found["le"]), 0.0) + v
            return out

        b, a = buckets(before), buckets(after)
        return cls(
            sorted((le, a[le] - b.get(le, 0.0)) for le in a),
            total(after, f"{name}_count", **match) - total(before, f"{name}_count", **match),
            total(after, f"{name}_sum", **match) - total(before, f"{name}_sum", **match),
        )

    def quantile_bound(self, q: float) -> float:
        """The smallest bucket bound with at least ``q`` of the observations at or under it."""
        for le, cumulative in self.buckets:
            if cumulative >= q * self.count:
                return le
        return math.inf

    def quantile(self, q: float) -> float:
        """Linear interpolation inside the bucket, as PromQL's ``histogram_quantile`` does."""
        rank, lower, below = q * self.count, 0.0, 0.0
        for le, cumulative in self.buckets:
            if cumulative >= rank:
                if math.isinf(le):
                    return lower
                inside = cumulative - below
                return lower + (le - lower) * ((rank - below) / inside if inside else 1.0)
            lower, below = le, cumulative
        return math.nan

    def fraction_at_most(self, bound: float) -> float:
        for le, cumulative in self.buckets:
            if le == bound:
                return cumulative / self.count if self.count else math.nan
        return math.nan

    def describe(self) -> str:
        if not self.count:
            return "no observations"
        return (
            f"p50 ≈ {self.quantile(0.5) * 1000:.1f} ms, p99 ≈ {self.quantile(0.99) * 1000:.1f} ms "
            f"(p99 ≤ {self.quantile_bound(0.99):g} s bucket), max bucket ≤ {self.quantile_bound(1.0):g} s, "
            f"mean {self.sum / self.count * 1000:.1f} ms, n={self.count:.0f}"
        )
