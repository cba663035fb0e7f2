"""A log of every request with counters by verb and resource, for tests and benchmarks.

Counters are exact and unbounded; the detailed records keep the most recent ``capacity``.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass

from kube_emulator.requestinfo import RequestInfo


@dataclass(eq=False)
class RequestRecord:
    info: RequestInfo
    query: str
    started: float
    status: int | None = None
    duration: float | None = None
    fault: str | None = None
    """Which injected fault(s) applied, e.g. ``"Respond"`` or ``"Delay, DropWatch"``."""

    @property
    def verb(self) -> str:
        return self.info.verb

    @property
    def resource(self) -> str:
        return self.info.resource_label

    def finish(self, status: int) -> None:
        self.status = status
        self.duration = time.monotonic() - self.started


class RequestLog:
    def __init__(self, capacity: int = 100_000) -> None:
        self.records: deque[RequestRecord] = deque(maxlen=capacity)
        self.started = 0  # records ever started: a reader that remembers it reads only the newer ones
        self._counts: Counter[tuple[str, str, str]] = Counter()

    def start(self, info: RequestInfo, query: str) -> RequestRecord:
        record = RequestRecord(info, query, time.monotonic())
        self.records.append(record)
        self.started += 1
        self._counts[(info.verb, info.resource_label, info.group)] += 1
        return record

    def count(self, verb: str | None = None, resource: str | None = None, group: str | None = None) -> int:
        """Requests so far, e.g. ``count("list", "pods")`` or ``count("patch", "deployments/scale")``;
        ``None`` matches anything."""
        return sum(
            n
            for (v, r, g), n in self._counts.items()
            if (verb is None or v == verb) and (resource is None or r == resource) and (group is None or g == group)
        )

    def counts(self) -> dict[str, int]:
        """``{"list pods": 3, "patch deployments/scale": 2, ...}``."""
        summary: Counter[str] = Counter()
        for (verb, resource, _), n in self._counts.items():
            summary[f"{verb} {resource}".strip()] += n
        return dict(sorted(summary.items()))

    def find(
        self, verb: str | None = None, resource: str | None = None, status: int | None = None
    ) -> list[RequestRecord]:
        return [
            record
            for record in self.records
            if (verb is None or record.verb == verb)
            and (resource is None or record.resource == resource)
            and (status is None or record.status == status)
        ]

    def reset(self) -> None:
        self.records.clear()
        self.started = 0
        self._counts.clear()
