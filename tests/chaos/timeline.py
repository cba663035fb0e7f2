"""What happened to one target over time, as seen from the API: the workload's replicas and the target's
status (current and desired replicas, conditions), sampled every 50 ms in the test's own loop.

The chaos tests assert on this record ("never below 8 until the window had passed", "no change while
Prometheus was down"), the way an operator would read a dashboard of the Deployment afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kube_emulator import KubeEmulator


@dataclass(frozen=True)
class Sample:
    at: float  # monotonic
    replicas: int | None  # the workload's spec.replicas (None: no workload)
    desired: int | None  # the target's status.desiredReplicas
    conditions: tuple[tuple[str, str, str, str], ...]  # (type, status, reason, message)

    def condition(self, type_: str) -> tuple[str, str, str] | None:
        for kind, status, reason, message in self.conditions:
            if kind == type_:
                return status, reason, message
        return None


class Timeline:
    def __init__(
        self,
        cluster: KubeEmulator,
        name: str,
        namespace: str = "default",
        *,
        workload: str | None = None,
        every: float = 0.05,
    ) -> None:
        self.cluster = cluster
        self.name = name
        self.namespace = namespace
        self.workload = workload or name
        self.every = every
        self.samples: list[Sample] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> Timeline:
        self._task = asyncio.create_task(self._sample(), name=f"timeline {self.name}")
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _sample(self) -> None:
        while True:
            self.samples.append(self.read())
            await asyncio.sleep(self.every)

    def read(self) -> Sample:
        workload = self.cluster.get("deployments", self.workload, self.namespace)
        target = self.cluster.get("scalingtargets.autoscaler.dev", self.name, self.namespace)
        status: dict[str, Any] = dict((target or {}).get("status") or {})
        conditions = tuple(
            (str(c.get("type")), str(c.get("status")), str(c.get("reason")), str(c.get("message")))
            for c in status.get("conditions") or []
        )
        replicas = int(workload["spec"]["replicas"]) if workload is not None else None
        desired = status.get("desiredReplicas")
        return Sample(time.monotonic(), replicas, int(desired) if desired is not None else None, conditions)

    # -- questions --------------------------------------------------------------------------------

    def between(self, start: float, end: float | None = None) -> list[Sample]:
        return [s for s in self.samples if s.at >= start and (end is None or s.at <= end)]

    def replicas_between(self, start: float, end: float | None = None) -> set[int | None]:
        return {s.replicas for s in self.between(start, end)}

    def first(self, predicate: Callable[[Sample], bool], since: float = 0.0) -> Sample | None:
        return next((s for s in self.samples if s.at >= since and predicate(s)), None)

    def changes(self) -> list[tuple[float, int | None]]:
        """(moment, replicas) at each change of the workload's replica count, the first sample included."""
        out: list[tuple[float, int | None]] = []
        for sample in self.samples:
            if not out or out[-1][1] != sample.replicas:
                out.append((sample.at, sample.replicas))
        return out

    def describe(self) -> str:
        if not self.samples:
            return "(no samples)"
        origin = self.samples[0].at
        lines = []
        previous: tuple[Any, ...] | None = None
        for sample in self.samples:
            active = sample.condition("ScalingActive")
            able = sample.condition("AbleToScale")
            key = (sample.replicas, sample.desired, active, able)
            if key != previous:
                lines.append(
                    f"{sample.at - origin:7.2f}s replicas={sample.replicas} desired={sample.desired} "
                    f"ScalingActive={active} AbleToScale={able}"
                )
                previous = key
        return "\n".join(lines)
