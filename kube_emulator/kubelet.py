"""The kubelet's part of controllers-lite: a pod's lifecycle, Pending → Running → Ready.

:class:`~kube_emulator.controllers.WorkloadController` creates the pods; a :class:`Kubelet` then moves each
one along on the emulator's clock: Running (``startTime``, a pod IP, containers started, not ready) after
:attr:`PodLifecycle.start_delay`, Ready (the ``Ready`` condition with its transition time) after
:attr:`PodLifecycle.ready_delay` more. With a :class:`~kube_emulator.clock.ManualClock` that takes no wall
time. Its writes go through :class:`~kube_emulator.operations.ApiOperations` (``pods/status``), so watchers
see them as they would a kubelet's.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from kube_emulator import errors
from kube_emulator.builtin_kinds import PODS
from kube_emulator.clock import Clock, format_time
from kube_emulator.jsonutil import JsonObject, clone
from kube_emulator.operations import ApiOperations

Stage = Literal["running", "ready"]


@dataclass(frozen=True, slots=True)
class PodLifecycle:
    start_delay: float = 0.0
    """Seconds from pod creation to Running (containers started, not yet ready)."""
    ready_delay: float = 0.0
    """Seconds from Running to Ready."""
    node_name: str = "emulated-node"


@dataclass(order=True, slots=True)
class _Timer:
    deadline: datetime
    sequence: int
    namespace: str
    name: str
    uid: str
    stage: Stage


def is_ready(pod: JsonObject) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


class Kubelet:
    """Pod timers on the emulator's clock, and the status writes they lead to."""

    def __init__(self, lifecycle: PodLifecycle) -> None:
        self.lifecycle = lifecycle
        self._ops: ApiOperations | None = None
        self._clock: Clock | None = None
        self._timers: list[_Timer] = []
        self._timer_sequence = itertools.count()
        self._timer_added = asyncio.Event()
        self._pod_ips = itertools.count(1)

    def start(self, ops: ApiOperations, clock: Clock) -> None:
        self._ops = ops
        self._clock = clock

    @property
    def ops(self) -> ApiOperations:
        assert self._ops is not None, "the kubelet is not started"
        return self._ops

    @property
    def clock(self) -> Clock:
        assert self._clock is not None, "the kubelet is not started"
        return self._clock

    def due(self) -> bool:
        """Whether a timer is due and not yet processed."""
        return bool(self._timers) and self._clock is not None and self._timers[0].deadline <= self._clock.now()

    def schedule(self, pod: JsonObject) -> None:
        """Start a new pod's lifecycle: at once where a delay is 0, else on a timer."""
        start, ready = self.lifecycle.start_delay, self.lifecycle.ready_delay
        meta = pod["metadata"]
        if start <= 0:
            self._advance_pod(
                str(meta["namespace"]),
                str(meta["name"]),
                str(meta["uid"]),
                "ready" if ready <= 0 else "running",
            )
            if ready > 0:
                self._add_timer(pod, ready, "ready")
        else:
            self._add_timer(pod, start, "ready" if ready <= 0 else "running")
            if ready > 0:
                self._add_timer(pod, start + ready, "ready")

    def _add_timer(self, pod: JsonObject, delay: float, stage: Stage) -> None:
        meta = pod["metadata"]
        deadline = self.clock.now() + timedelta(seconds=delay)
        heapq.heappush(
            self._timers,
            _Timer(
                deadline,
                next(self._timer_sequence),
                str(meta["namespace"]),
                str(meta["name"]),
                str(meta["uid"]),
                stage,
            ),
        )
        self._timer_added.set()

    async def run(self) -> None:
        """Fire the timers as the clock reaches them (a task; runs until cancelled)."""
        while True:
            if not self._timers:
                self._timer_added.clear()
                await self._timer_added.wait()
                continue
            deadline = self._timers[0].deadline
            if deadline > self.clock.now():
                self._timer_added.clear()
                sleeper = asyncio.ensure_future(self.clock.sleep_until(deadline))
                interrupt = asyncio.ensure_future(self._timer_added.wait())
                try:
                    await asyncio.wait({sleeper, interrupt}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    sleeper.cancel()
                    interrupt.cancel()
                continue
            timer = heapq.heappop(self._timers)
            try:
                self._advance_pod(timer.namespace, timer.name, timer.uid, timer.stage)
            except errors.ApiError as problem:
                if problem.code not in (404, 409):
                    raise

    def _advance_pod(self, namespace: str, name: str, uid: str, stage: Stage) -> None:
        stored = self.ops.store.get(PODS.storage_key, namespace, name)
        if (
            stored is None
            or stored.obj["metadata"].get("uid") != uid
            or stored.obj["metadata"].get("deletionTimestamp")
        ):
            return
        pod = stored.obj
        now = format_time(self.clock.now())
        status = clone(pod.get("status") or {})
        ready = stage == "ready"
        created = str(pod["metadata"].get("creationTimestamp"))
        if status.get("phase") != "Running":
            address = next(self._pod_ips)
            pod_ip = f"10.244.{address // 250 % 250}.{address % 250 + 1}"
            status.update(
                {
                    "phase": "Running",
                    "hostIP": "10.0.0.1",
                    "podIP": pod_ip,
                    "podIPs": [{"ip": pod_ip}],
                    "startTime": now,
                }
            )
        started_at = status.get("startTime", now)
        transition = {"status": "True" if ready else "False", "lastTransitionTime": now}
        not_ready = {} if ready else {"reason": "ContainersNotReady", "message": "containers with unready status"}
        status["conditions"] = [
            {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": started_at},
            {"type": "Initialized", "status": "True", "lastTransitionTime": created},
            {"type": "Ready", **transition, **not_ready},
            {"type": "ContainersReady", **transition, **not_ready},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": created},
        ]
        status["containerStatuses"] = [
            {
                "name": container.get("name"),
                "image": container.get("image", ""),
                "imageID": "",
                "containerID": f"emulated://{uid[:8]}-{container.get('name')}",
                "ready": ready,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": started_at}},
            }
            for container in (pod.get("spec") or {}).get("containers") or []
        ]
        self.ops.update(PODS, namespace, name, {"metadata": {"name": name}, "status": status}, subresource="status")
