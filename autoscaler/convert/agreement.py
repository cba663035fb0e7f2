"""How closely a converted target's replay follows what the old autoscaler decided, sync by sync,
and why they part where they do. Pure: the replay and the history are given."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

# Why a sync disagrees, in the order they are tested (the first that applies is the cause).
CAUSES = {
    "metric": "a metric could not be read in the replay (a metric the adapter served differently, or a query "
    "that returns nothing there)",
    "timing": "one sync apart: the same decision a sync earlier or later (the HPA's own sync and "
    "kube-state-metrics' scrape are not the replay's)",
    "window": "a stabilization window held the replay's proposal (its window or the controller's default differs)",
    "limit": "a scaling policy limited the replay (behavior policies, or the HPA's legacy limits)",
    "tolerance": "off by one: tolerance or rounding at a boundary (the adapter truncated values to the milli, "
    "this autoscaler rounds up; samples taken seconds apart)",
    "values": "the replay saw other metric values than the old autoscaler (a metric the adapter served "
    "differently: another query, window or series)",
}


@dataclass(frozen=True, slots=True)
class Sync:
    at: float
    replay: int
    old: int | None  # the old autoscaler's desired replicas (None: not recorded then)
    limited_by: str | None  # the replay's limiting reason, if any
    failed: bool  # a metric of the replay failed at this sync


@dataclass
class Agreement:
    compared: int = 0
    equal: int = 0
    largest_gap: int = 0
    over_seconds: float = 0.0  # the replay above the old autoscaler
    under_seconds: float = 0.0
    first_difference: float | None = None
    causes: Counter[str] = field(default_factory=Counter)

    @property
    def share(self) -> float | None:
        return self.equal / self.compared if self.compared else None

    def flagged(self, threshold: float) -> bool:
        """Below ``threshold`` (a fraction) of the compared syncs equal, or nothing to compare at all."""
        return self.share is None or self.share < threshold


def _cause(syncs: Sequence[Sync], index: int) -> str:
    sync = syncs[index]
    assert sync.old is not None
    if sync.failed:
        return "metric"
    neighbours = [syncs[i].replay for i in (index - 1, index + 1) if 0 <= i < len(syncs)]
    if sync.old in neighbours:
        return "timing"
    if sync.limited_by and "Stabilized" in sync.limited_by:
        return "window"
    if sync.limited_by:
        return "limit"
    if abs(sync.replay - sync.old) == 1:
        return "tolerance"
    return "values"


def agreement(syncs: Sequence[Sync], step: float) -> Agreement:
    result = Agreement()
    for index, sync in enumerate(syncs):
        if sync.old is None:
            continue
        result.compared += 1
        gap = sync.replay - sync.old
        if gap == 0:
            result.equal += 1
            continue
        result.largest_gap = max(result.largest_gap, abs(gap))
        if gap > 0:
            result.over_seconds += step
        else:
            result.under_seconds += step
        if result.first_difference is None:
            result.first_difference = sync.at
        result.causes[_cause(syncs, index)] += 1
    return result
