"""Kubernetes Events on targets, aggregated like client-go's recorder.

A repeated Event (same object, type, reason and message within ten minutes) bumps the existing
Event's ``count`` and ``lastTimestamp`` instead of creating another object, so a target that fails
every 15 s produces one Event with a growing count, not 40 an hour. Posting is best effort: a failure
is logged and never interrupts a sync.

Each object's Events also pass client-go's spam filter (``EventSourceObjectSpamFilter``): a token
bucket per object holding 25, refilled one every 5 minutes. A target that fails every sync then costs
the API server 25 writes and one per 5 minutes after, not one per sync: when Prometheus is down for
10,000 targets, that is the difference between ~667 Event writes a second and ~33 (after the burst). An Event
the filter holds back is counted (:attr:`EventRecorder.dropped`, ``autoscaler_events_dropped_total``),
not written; every decision is still in the target's status and in the log.

The memory of both (the Events to aggregate, the buckets) keeps the most recently used ``MAX_TRACKED``
keys: more than one per target at 10,000 targets, so that a cluster-wide failure neither turns every
repeat into a new Event nor refills every bucket (client-go keeps 4,096).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from autoscaler.kube.api import EVENTS, KubeApi, KubeError
from autoscaler.values.timestamps import rfc3339

log = structlog.get_logger("autoscaler.events")

AGGREGATION_WINDOW = 600.0
MAX_TRACKED = 65_536
SPAM_BURST = 25  # client-go's defaultSpamBurst
SPAM_REFILL_SECONDS = 300.0  # one Event more per object every 5 minutes (client-go's defaultSpamQPS = 1/300)
COMPONENT = "autoscaler"


@dataclass(frozen=True, slots=True)
class InvolvedObject:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    def as_dict(self) -> dict[str, str]:
        ref = {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace, "name": self.name}
        if self.uid:
            ref["uid"] = self.uid
        return ref


@dataclass
class _Seen:
    event_name: str
    count: int
    last: float


@dataclass
class _Bucket:
    tokens: float
    updated: float

    def take(self, now: float) -> bool:
        """One token if there is one (after refilling for the time since the last call)."""
        self.tokens = min(SPAM_BURST, self.tokens + max(0.0, now - self.updated) / SPAM_REFILL_SECONDS)
        self.updated = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class EventRecorder:
    def __init__(
        self,
        api: KubeApi,
        *,
        instance: str = "",
        clock: Callable[[], float] = time.time,
        on_dropped: Callable[[], None] = lambda: None,
    ) -> None:
        self.api = api
        self.instance = instance
        self.clock = clock
        self.on_dropped = on_dropped
        self._seen: OrderedDict[tuple[Any, ...], _Seen] = OrderedDict()
        self._buckets: OrderedDict[InvolvedObject, _Bucket] = OrderedDict()
        self.posted = 0
        self.dropped = 0  # held back by the spam filter

    async def record(self, obj: InvolvedObject, type_: str, reason: str, message: str) -> None:
        now = self.clock()
        if not self._admit(obj, now):
            self.dropped += 1
            self.on_dropped()
            return
        key = (obj.namespace, obj.kind, obj.name, obj.uid, type_, reason, message)
        seen = self._seen.get(key)
        try:
            if seen is not None and now - seen.last < AGGREGATION_WINDOW:
                seen.count += 1
                seen.last = now
                self._seen.move_to_end(key)
                await self.api.merge_patch(
                    EVENTS.item(obj.namespace, seen.event_name),
                    {"count": seen.count, "lastTimestamp": rfc3339(now)},
                    resource="events",
                )
            else:
                created = await self.api.create(
                    EVENTS.collection(obj.namespace), self._event(obj, type_, reason, message, now), resource="events"
                )
                name = str(((created or {}).get("metadata") or {}).get("name") or "")
                self._remember(key, _Seen(name, 1, now))
            self.posted += 1
        except KubeError as exc:
            if seen is not None and exc.not_found:
                self._seen.pop(key, None)  # the aggregated Event expired: start a new one next time
            log.warning("could not post event", reason=reason, object=f"{obj.namespace}/{obj.name}", error=str(exc))

    def _admit(self, obj: InvolvedObject, now: float) -> bool:
        """The spam filter: whether ``obj`` may have another Event now."""
        bucket = self._buckets.get(obj)
        if bucket is None:
            bucket = self._buckets[obj] = _Bucket(SPAM_BURST, now)
            _bound(self._buckets)
        else:
            self._buckets.move_to_end(obj)
        return bucket.take(now)

    def _remember(self, key: tuple[Any, ...], seen: _Seen) -> None:
        self._seen[key] = seen
        _bound(self._seen)

    def _event(self, obj: InvolvedObject, type_: str, reason: str, message: str, now: float) -> Mapping[str, Any]:
        stamp = rfc3339(now)
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{obj.name}.", "namespace": obj.namespace},
            "involvedObject": obj.as_dict(),
            "type": type_,
            "reason": reason,
            "message": message[:1024],
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
        }


def _bound(remembered: OrderedDict[Any, Any]) -> None:
    """Forget the least recently used entries past ``MAX_TRACKED``."""
    while len(remembered) > MAX_TRACKED:
        remembered.popitem(last=False)
