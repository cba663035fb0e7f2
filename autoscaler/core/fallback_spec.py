"""``spec.fallback``: what a target scales to while a metric cannot be read (KEDA's ``fallback``).

The fields, their defaults and their checks; what a sync does with them is :mod:`autoscaler.core.fallback`.

- ``replicas`` (required, ≥ 0): the count a failed metric stands for once the fallback begins.
- ``behavior``: how ``replicas`` and the current count combine (KEDA's ``doFallback``): ``static`` (the
  default: ``replicas``), ``currentReplicas`` (the current count), ``currentReplicasIfHigher`` (the larger
  of the two), ``currentReplicasIfLower`` (the smaller).
- ``failureThreshold`` (≥ 0): the fallback begins once a metric failed *more* than this many syncs in a row
  (KEDA's rule: 3 falls back at the 4th failure, 0 at the first).
- ``failureDurationSeconds`` (≥ 0): the fallback begins once a metric has been failing for at least this
  long, from its first failed sync (the shape of KEP-5679's ``failureDuration``).

At least one of the two thresholds is required; with both, whichever is reached first.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from autoscaler.core.gomath import MAX_INT32
from autoscaler.values.fields import Obj

# A day: a failure lasting longer is an outage, not a blip to ride out; a larger value is a typo.
MAX_FAILURE_DURATION_SECONDS = 86_400


class FallbackBehavior(enum.StrEnum):
    """KEDA's ``fallback.behavior`` values, spelled as KEDA spells them."""

    STATIC = "static"
    CURRENT_REPLICAS = "currentReplicas"
    CURRENT_REPLICAS_IF_HIGHER = "currentReplicasIfHigher"
    CURRENT_REPLICAS_IF_LOWER = "currentReplicasIfLower"


@dataclass(frozen=True, slots=True)
class FallbackSpec:
    """A parsed, valid ``spec.fallback``: at least one of the thresholds is set."""

    replicas: int
    behavior: FallbackBehavior = FallbackBehavior.STATIC
    failure_threshold: int | None = None
    failure_duration_seconds: int | None = None

    def replicas_for(self, current: int) -> int:
        """The count a failed metric stands for with ``current`` replicas now (KEDA's ``doFallback``)."""
        behavior = self.behavior
        if behavior is FallbackBehavior.CURRENT_REPLICAS:
            return current
        if behavior is FallbackBehavior.CURRENT_REPLICAS_IF_HIGHER:
            return max(current, self.replicas)
        if behavior is FallbackBehavior.CURRENT_REPLICAS_IF_LOWER:
            return min(current, self.replicas)
        return self.replicas

    def reached(self, failures: int, since: float | None, now: float) -> bool:
        """Whether a metric that failed ``failures`` syncs in a row, the first at ``since``, falls back at
        ``now``: more failures than ``failureThreshold``, or failing for ``failureDurationSeconds`` or longer."""
        if failures <= 0:
            return False
        threshold = self.failure_threshold
        if threshold is not None and failures > threshold:
            return True
        duration = self.failure_duration_seconds
        return duration is not None and since is not None and now - since >= duration

    def threshold_text(self) -> str:
        """The thresholds in words, for messages: "more than 3 syncs in a row or for 60s"."""
        parts = []
        if self.failure_threshold is not None:
            parts.append(f"more than {self.failure_threshold} syncs in a row")
        if self.failure_duration_seconds is not None:
            parts.append(f"for {self.failure_duration_seconds}s")
        return " or ".join(parts)


def read_fallback(obj: Obj) -> FallbackSpec | None:
    """``spec.fallback`` (``obj`` is its view); None with the problems added to ``obj``'s errors."""
    before = len(obj.errors.items)
    replicas = obj.integer("replicas", required=True, minimum=0, maximum=MAX_INT32)
    behavior = obj.string(
        "behavior", default=FallbackBehavior.STATIC.value, choices=[b.value for b in FallbackBehavior]
    )
    threshold = obj.integer("failureThreshold", minimum=0, maximum=MAX_INT32)
    duration = obj.integer("failureDurationSeconds", minimum=0, maximum=MAX_FAILURE_DURATION_SECONDS)
    if not obj.has("failureThreshold") and not obj.has("failureDurationSeconds"):
        obj.errors.add(obj.path, "must set failureThreshold, failureDurationSeconds or both: when the fallback begins")
    obj.finish()
    if len(obj.errors.items) > before or replicas is None or behavior is None:
        return None
    return FallbackSpec(replicas, FallbackBehavior(behavior), threshold, duration)
