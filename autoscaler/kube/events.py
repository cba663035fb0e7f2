"""Kubernetes Events on targets, aggregated like client-go's recorder.

A repeated Event (same object, type, reason and message within ten minutes) bumps the existing
Event's ``count`` and ``lastTimestamp`` instead of creating another object, so a target that fails
every 15 s produces one Event with a growing count, not 40 an hour. Posting is best effort: a failure
is logged and never interrupts a sync.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from autoscaler.kube.api import EVENTS, KubeApi, KubeError
from autoscaler.values.timestamps import rfc3339

log = structlog.get_logger("autoscaler.events")

AGGREGATION_WINDOW = 600.0
MAX_TRACKED = 4096
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


class EventRecorder:
    def __init__(self, api: KubeApi, *, instance: str = "") -> None:
        self.api = api
        self.instance = instance
        self._seen: OrderedDict[tuple[Any, ...], _Seen] = OrderedDict()
        self.posted = 0

    async def record(self, obj: InvolvedObject, type_: str, reason: str, message: str) -> None:
        key = (obj.namespace, obj.kind, obj.name, obj.uid, type_, reason, message)
        now = time.time()
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

    def _remember(self, key: tuple[Any, ...], seen: _Seen) -> None:
        self._seen[key] = seen
        while len(self._seen) > MAX_TRACKED:
            self._seen.popitem(last=False)

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
