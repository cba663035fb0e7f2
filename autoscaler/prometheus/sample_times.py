"""How far a sample's time may be from the time its query was evaluated at, and the failure past that.

Prometheus stamps every sample of an instant query's answer with the query's evaluation time: the ``time=``
it was asked for, or for a live query (no ``time=``: the service's) its own clock when it evaluated it. A
sample much older, or ahead, is not what a live Prometheus answers: a misbehaving remote-read or federation,
a VictoriaMetrics staleness setting, a store answering with what it last had. Read as now, its value (a
year-old 0) would scale a workload down. So a sample older than ``prometheus.maxSampleAgeSeconds`` (300 s by
default: a few scrape intervals, ten times a VictoriaMetrics' 30 s latency offset) or ahead by more than the
clock-skew bound (``sync.clockSkewWarningSeconds``) fails its metric, naming the pod or series and how far
its time is; a failed metric never votes for a scale-down.

Prometheus' time, for a live query, is the service's clock less the skew the answers' ``Date`` headers show
(:class:`~autoscaler.loop.clock.SkewMonitor`, :func:`autoscaler.service.backends.timed_reads.sample_times`):
a service whose clock is minutes off does not see every sample as stale, and a Prometheus whose clock is
off stamps its samples by that clock, which its ``Date`` shows too.

Cheap on the per-pod path: a batched answer's readings hold the answer's one time and the few pods whose
time differs (:mod:`autoscaler.core.pod_columns`), so a reading is checked with one comparison, plus one a
pod whose time differs. The age in a message is rounded (``365d``, ``7m``): a condition's message stays the
same from one sync to the next for the same trouble (only its cause changes it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from autoscaler.core.observation import MetricFailure, PodUsage, Sample
from autoscaler.core.pod_columns import SampleColumns, UsageColumns

__all__ = ["DEFAULT_MAX_AGE", "DEFAULT_MAX_AHEAD", "SampleTimes", "rough_duration"]

DEFAULT_MAX_AGE = 300.0  # prometheus.maxSampleAgeSeconds' default
DEFAULT_MAX_AHEAD = 10.0  # sync.clockSkewWarningSeconds' default

_CAUSE = (
    "the backend answered with samples stamped far from the query's evaluation time (a remote-read, "
    "federation or staleness setting?); a metric read from them cannot vote (no scale-down from it)"
)
_UNITS: tuple[tuple[str, float], ...] = (("d", 86400.0), ("h", 3600.0), ("m", 60.0))


def rough_duration(seconds: float) -> str:
    """``seconds`` rounded to the largest unit it holds twice or more: ``365d``, ``7m``, ``45s``."""
    for unit, size in _UNITS:
        if seconds >= 2 * size:
            return f"{round(seconds / size)}{unit}"
    return f"{round(seconds)}s"


class SampleTimes:
    """The bounds of a sample's time around its query's evaluation time, and Prometheus' clock (``now``),
    which a live query's evaluation time is read from when its answer is in."""

    __slots__ = ("max_age", "max_ahead", "now")

    def __init__(
        self,
        max_age: float = DEFAULT_MAX_AGE,
        max_ahead: float = DEFAULT_MAX_AHEAD,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.max_age = max_age
        self.max_ahead = max_ahead
        self.now = now

    def evaluated_at(self, at: float | None) -> float:
        """When a query asked at ``at`` (None: live) was evaluated, by Prometheus' clock."""
        return at if at is not None else self.now()

    def within(self, timestamp: float, reference: float) -> bool:
        return reference - self.max_age <= timestamp <= reference + self.max_ahead

    def pods_failure(
        self, pods: Mapping[str, Sample] | Mapping[str, PodUsage], reference: float
    ) -> MetricFailure | None:
        """The failure of a per-pod reading with a pod's sample out of bounds (the first such pod by name),
        None when every pod's is within them."""
        lowest, highest = reference - self.max_age, reference + self.max_ahead
        offenders: list[tuple[str, float]] = []
        count = 0  # pods whose sample is out of bounds
        if isinstance(pods, (SampleColumns, UsageColumns)):
            timestamp, times = pods.timestamp, pods.times
            shared_within = lowest <= timestamp <= highest
            if shared_within and not times:
                return None  # the common case: one comparison
            for pod, at in times.items():
                if not lowest <= at <= highest:
                    offenders.append((pod, at))
            count = len(offenders)
            if not shared_within and len(times) < len(pods):  # the pods of the answer's time (not in times)
                offenders.append((min(pod for pod in pods if pod not in times), timestamp))
                count += len(pods) - len(times)
        else:
            for pod, item in pods.items():
                if not lowest <= item.timestamp <= highest:
                    offenders.append((pod, item.timestamp))
            count = len(offenders)
        if not offenders:
            return None
        pod, at = min(offenders)
        others = count - 1
        also = f" (and the samples of {others} other pod{'s' if others > 1 else ''})" if others else ""
        return MetricFailure(self.describe(f'the sample for pod "{pod}"{also}', at, reference))

    def describe(self, what: str, timestamp: float, reference: float) -> str:
        """Why the sample ``what`` names, stamped ``timestamp``, cannot be read for a query evaluated at
        ``reference``."""
        if timestamp < reference:
            offset = (
                f"{rough_duration(reference - timestamp)} old (limit {self.max_age:g}s, prometheus.maxSampleAgeSeconds)"
            )
        else:
            offset = (
                f"{rough_duration(timestamp - reference)} ahead of Prometheus' time "
                f"(limit {self.max_ahead:g}s, sync.clockSkewWarningSeconds)"
            )
        return f"{what} is {offset}: {_CAUSE}"
