"""What happens to the demo workload in the emulated cluster, recorded as it happens: its pods
(running, ready), its Deployment's replicas, and the pod-seconds they add up to.

It listens to the emulator's store in-process (every committed change, in order, synchronously), so
nothing is sampled and nothing is missed.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler_sandbox.timescale import TimeScale
from autoscaler_sandbox.traffic import PodState
from autoscaler_sandbox.world import Workload
from kube_emulator import KubeEmulator
from kube_emulator.jsonutil import JsonObject
from kube_emulator.kubelet import is_ready
from kube_emulator.watch import WatchEvent


@dataclass(frozen=True, slots=True)
class ReplicaChange:
    at: float  # demo seconds
    old: int
    new: int


class ClusterRecorder:
    def __init__(self, emulator: KubeEmulator, workload: Workload, scale: TimeScale) -> None:
        self.emulator = emulator
        self.workload = workload
        self.scale = scale
        self.pods: dict[str, PodState] = {}
        self.replicas: int | None = None
        self.changes: list[ReplicaChange] = []
        self.peak: tuple[int, float] | None = None  # replicas, demo time first reached
        self.pod_seconds = 0.0
        self.ready_pod_seconds = 0.0
        self.pods_started = 0
        self._last = 0.0
        self._pods_key = emulator.resource("pods").storage_key
        self._deployments_key = emulator.resource("deployments").storage_key

    def attach(self) -> None:
        store = self.emulator.store
        store.add_listener(self._pods_key, self._on_pod)
        store.add_listener(self._deployments_key, self._on_deployment)
        for stored in store.list(self._pods_key, self.workload.namespace):
            self._pod(stored.obj, deleted=False)
        deployment = store.get(self._deployments_key, self.workload.namespace, self.workload.name)
        if deployment is not None:
            self._deployment(deployment.obj)

    def detach(self) -> None:
        self._advance()
        self.emulator.store.remove_listener(self._pods_key, self._on_pod)
        self.emulator.store.remove_listener(self._deployments_key, self._on_deployment)

    def begin(self) -> None:
        """The curve starts now: count from here."""
        self._last = self.scale.now()
        if self.replicas is not None:
            self.peak = (self.replicas, self._last)

    # -- reading ----------------------------------------------------------------------------------

    def pod_states(self) -> list[PodState]:
        return list(self.pods.values())

    @property
    def ready(self) -> int:
        return sum(1 for pod in self.pods.values() if pod.ready)

    def finish(self) -> None:
        self._advance()

    # -- listening --------------------------------------------------------------------------------

    def _advance(self) -> None:
        """Add the pod-seconds since the last change (nothing before the curve starts)."""
        if not self.scale.started:
            return
        now = self.scale.now()
        elapsed = max(0.0, now - self._last)
        self.pod_seconds += elapsed * len(self.pods)
        self.ready_pod_seconds += elapsed * self.ready
        self._last = now

    def _mine(self, obj: JsonObject) -> bool:
        meta = obj.get("metadata") or {}
        return bool(
            meta.get("namespace") == self.workload.namespace
            and (meta.get("labels") or {}).get("app") == self.workload.name
        )

    def _on_pod(self, _key: str, event: WatchEvent) -> None:
        if self._mine(event.current.obj):
            self._advance()
            self._pod(event.current.obj, deleted=event.type == "DELETED")

    def _pod(self, obj: JsonObject, *, deleted: bool) -> None:
        if not self._mine(obj):
            return
        name = str(obj["metadata"]["name"])
        if deleted or obj["metadata"].get("deletionTimestamp"):
            self.pods.pop(name, None)
            return
        if name not in self.pods and self.scale.started:
            self.pods_started += 1
        running = (obj.get("status") or {}).get("phase") == "Running"
        self.pods[name] = PodState(name, running, running and is_ready(obj))

    def _on_deployment(self, _key: str, event: WatchEvent) -> None:
        meta = event.current.obj.get("metadata") or {}
        if (meta.get("namespace"), meta.get("name")) == (self.workload.namespace, self.workload.name):
            self._deployment(event.current.obj)

    def _deployment(self, obj: JsonObject) -> None:
        replicas = int((obj.get("spec") or {}).get("replicas", 1) or 0)
        if replicas == self.replicas:
            return
        if self.replicas is not None and self.scale.started:
            now = self.scale.now()
            self.changes.append(ReplicaChange(now, self.replicas, replicas))
            if self.peak is None or replicas > self.peak[0]:
                self.peak = (replicas, now)
        self.replicas = replicas
