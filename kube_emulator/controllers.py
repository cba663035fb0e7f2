"""Controllers-lite: just enough of kube-controller-manager and the kubelet to make workloads
look alive. Off by default; pass them to ``KubeEmulator(controllers=[...])``.

:class:`WorkloadController` keeps each Deployment / StatefulSet / ReplicaSet's pods in step
with ``spec.replicas`` and its ``status`` in step with its pods:

* pods carry the template's labels, annotations and spec (container requests included) and
  an owner reference to the workload (Deployments own their pods directly: no ReplicaSets);
* a pod goes Pending → Running (``startTime``, containers started, not ready) after
  ``start_delay`` → Ready (``Ready`` condition with its transition time) after
  ``ready_delay``, measured on the emulator's clock, so a :class:`ManualClock` runs it in
  zero wall time;
* scaling down deletes the least useful pods first (pending, then not ready, then newest),
  StatefulSets the highest ordinals; a template change replaces the pods, removing the old
  ones once enough new ones are ready;
* status: ``replicas``, ``updatedReplicas``, ``readyReplicas``, ``availableReplicas``,
  ``observedGeneration`` and Available/Progressing conditions (zero counts omitted, as the
  real types' ``omitempty`` does).

It works through :class:`~kube_emulator.operations.ApiOperations` in-process, so its
writes have full API semantics and watch events, but do not appear in the request log.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import heapq
import itertools
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal

from kube_emulator import errors
from kube_emulator.builtin_kinds import PODS
from kube_emulator.clock import Clock, format_time
from kube_emulator.jsonutil import JsonObject, clone, json_equal
from kube_emulator.operations import ApiOperations
from kube_emulator.resources import ResourceType
from kube_emulator.selectors import selector_from_label_selector
from kube_emulator.watch import StoredObject, WatchEvent

if TYPE_CHECKING:
    from kube_emulator.server import KubeEmulator

WorkKey = tuple[str, str, str]
"""``(storage key, namespace, name)`` of a workload."""
Stage = Literal["running", "ready"]

_RANDOM_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


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


def template_hash(template: JsonObject) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return "".join(_RANDOM_ALPHABET[int(digest[i : i + 2], 16) % len(_RANDOM_ALPHABET)] for i in range(0, 20, 2))


def is_ready(pod: JsonObject) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _controller_of(pod: JsonObject) -> JsonObject | None:
    for reference in pod["metadata"].get("ownerReferences") or []:
        if reference.get("controller"):
            return dict(reference)
    return None


class WorkloadController:
    def __init__(
        self,
        lifecycle: PodLifecycle | None = None,
        kinds: tuple[str, ...] = ("deployments", "statefulsets", "replicasets"),
    ) -> None:
        self.lifecycle = lifecycle or PodLifecycle()
        self._kinds = kinds
        self._types: dict[str, ResourceType] = {}
        self._ops: ApiOperations | None = None
        self._clock: Clock | None = None
        self._queue: asyncio.Queue[WorkKey] = asyncio.Queue()
        self._queued: set[WorkKey] = set()
        self._busy = False
        self._timers: list[_Timer] = []
        self._timer_sequence = itertools.count()
        self._timer_added = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._deleted_uids: dict[WorkKey, str] = {}
        self._pod_ips = itertools.count(1)

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self, emulator: KubeEmulator) -> None:
        self._ops = emulator.api
        self._clock = emulator.clock
        for kind in self._kinds:
            resource_type = emulator.registry.resolve(f"{kind}.apps")
            self._types[resource_type.storage_key] = resource_type
            emulator.store.add_listener(resource_type.storage_key, self._on_workload)
            for stored in emulator.store.list(resource_type.storage_key):
                self._enqueue((resource_type.storage_key, stored.namespace, stored.name))
        emulator.store.add_listener(PODS.storage_key, self._on_pod)
        self._tasks = [asyncio.create_task(self._work()), asyncio.create_task(self._run_timers())]

    async def stop(self) -> None:
        if self._ops is not None:
            for storage_key in self._types:
                self._ops.store.remove_listener(storage_key, self._on_workload)
            self._ops.store.remove_listener(PODS.storage_key, self._on_pod)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def settle(self, max_rounds: int = 10_000) -> None:
        """Wait until every queued reconcile and every timer already due has been processed."""
        for _ in range(max_rounds):
            if self._queue.empty() and not self._busy and not self._due_timers():
                return
            await asyncio.sleep(0)
        raise TimeoutError("the workload controller did not settle")

    def _due_timers(self) -> bool:
        return bool(self._timers) and self._clock is not None and self._timers[0].deadline <= self._clock.now()

    # --- event intake ----------------------------------------------------------------------------

    def _enqueue(self, key: WorkKey) -> None:
        if key not in self._queued:
            self._queued.add(key)
            self._queue.put_nowait(key)

    def _on_workload(self, storage_key: str, event: WatchEvent) -> None:
        key = (storage_key, event.current.namespace, event.current.name)
        if event.type == "DELETED":
            self._deleted_uids[key] = str(event.current.obj["metadata"].get("uid"))
        self._enqueue(key)

    def _on_pod(self, _storage_key: str, event: WatchEvent) -> None:
        owner = _controller_of(event.current.obj)
        if owner is None:
            return
        for storage_key, resource_type in self._types.items():
            if owner.get("kind") == resource_type.kind and owner.get("apiVersion") == resource_type.api_version:
                self._enqueue((storage_key, event.current.namespace, str(owner.get("name"))))

    async def _work(self) -> None:
        while True:
            key = await self._queue.get()
            self._queued.discard(key)
            self._busy = True
            try:
                self._reconcile(key)
            except errors.ApiError as problem:
                # A conflicting writer won this round; the change it made brings us back here.
                if problem.code not in (404, 409):
                    raise
            finally:
                self._busy = False
            await asyncio.sleep(0)

    # --- reconciling -----------------------------------------------------------------------------

    @property
    def ops(self) -> ApiOperations:
        assert self._ops is not None, "the controller is not started"
        return self._ops

    @property
    def clock(self) -> Clock:
        assert self._clock is not None, "the controller is not started"
        return self._clock

    def _owned_pods(self, namespace: str, uid: str, selector_spec: JsonObject | None) -> list[StoredObject]:
        selector = selector_from_label_selector(selector_spec) if selector_spec else None
        if selector is None:
            return []
        return [
            pod
            for pod in self.ops.store.list(PODS.storage_key, namespace, selector)
            if any(ref.get("uid") == uid for ref in pod.obj["metadata"].get("ownerReferences") or [])
        ]

    def _reconcile(self, key: WorkKey) -> None:
        storage_key, namespace, name = key
        resource_type = self._types[storage_key]
        stored = self.ops.store.get(storage_key, namespace, name)
        if stored is None:
            self._collect_garbage(namespace, self._deleted_uids.pop(key, None))
            return
        workload = stored.obj
        meta, spec = workload["metadata"], workload.get("spec") or {}
        if meta.get("deletionTimestamp"):
            return
        uid = str(meta["uid"])
        revision = template_hash(spec.get("template") or {})
        desired = int(spec.get("replicas", 1) or 0)
        pods = [
            p
            for p in self._owned_pods(namespace, uid, spec.get("selector"))
            if not p.obj["metadata"].get("deletionTimestamp")
        ]
        current = [p for p in pods if self._revision_of(resource_type, p.obj) == revision]
        old = [p for p in pods if self._revision_of(resource_type, p.obj) != revision]

        if len(current) < desired:
            for _ in range(desired - len(current)):
                pods.append(self._create_pod(resource_type, workload, revision, pods))
        elif len(current) > desired:
            for pod in self._deletion_order(resource_type, current)[: len(current) - desired]:
                self._delete_pod(pod)
        ready_current = sum(1 for p in current if is_ready(p.obj))
        if old and (desired == 0 or ready_current >= desired):
            for pod in old:
                self._delete_pod(pod)
        self._write_status(resource_type, stored, revision)

    def _collect_garbage(self, namespace: str, uid: str | None) -> None:
        if uid is None:
            return
        for pod in self.ops.store.list(PODS.storage_key, namespace):
            if any(ref.get("uid") == uid for ref in pod.obj["metadata"].get("ownerReferences") or []):
                self._delete_pod(pod)

    @staticmethod
    def _revision_of(resource_type: ResourceType, pod: JsonObject) -> str | None:
        labels = pod["metadata"].get("labels") or {}
        if resource_type.kind == "StatefulSet":
            value = labels.get("controller-revision-hash", "")
            return str(value).rsplit("-", 1)[-1] if value else None
        annotations = pod["metadata"].get("annotations") or {}
        return labels.get("pod-template-hash") or annotations.get("emulator.autoscaler/template-hash")

    def _deletion_order(self, resource_type: ResourceType, pods: list[StoredObject]) -> list[StoredObject]:
        if resource_type.kind == "StatefulSet":
            return sorted(pods, key=lambda p: -_ordinal(p.name))
        phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}

        def rank(pod: StoredObject) -> tuple[int, int, str, str]:
            status = pod.obj.get("status") or {}
            created = str(pod.obj["metadata"].get("creationTimestamp", ""))
            # Newer pods go first: invert the timestamp's sort order.
            inverted = "".join(chr(0x10FFFF - ord(char)) for char in created)
            return (phase_rank.get(str(status.get("phase")), 0), int(is_ready(pod.obj)), inverted, pod.name)

        return sorted(pods, key=rank)

    def _create_pod(
        self, resource_type: ResourceType, workload: JsonObject, revision: str, existing: list[StoredObject]
    ) -> StoredObject:
        meta, spec = workload["metadata"], workload.get("spec") or {}
        template = spec.get("template") or {}
        template_meta = template.get("metadata") or {}
        labels = dict(template_meta.get("labels") or {})
        annotations = dict(template_meta.get("annotations") or {})
        name = str(meta["name"])
        if resource_type.kind == "StatefulSet":
            taken = {_ordinal(p.name) for p in existing}
            ordinal = next(i for i in itertools.count() if i not in taken)
            pod_name = f"{name}-{ordinal}"
            labels["controller-revision-hash"] = f"{name}-{revision}"
            labels["statefulset.kubernetes.io/pod-name"] = pod_name
            generate_name = None
        elif resource_type.kind == "Deployment":
            labels["pod-template-hash"] = revision
            pod_name, generate_name = None, f"{name}-{revision}-"
        else:
            annotations["emulator.autoscaler/template-hash"] = revision
            pod_name, generate_name = None, f"{name}-"
        pod_meta: JsonObject = {
            "namespace": meta.get("namespace"),
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": resource_type.api_version,
                    "kind": resource_type.kind,
                    "name": name,
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        if annotations:
            pod_meta["annotations"] = annotations
        if pod_name:
            pod_meta["name"] = pod_name
        else:
            pod_meta["generateName"] = generate_name
        pod_spec = clone(template.get("spec") or {})
        pod_spec["nodeName"] = self.lifecycle.node_name
        created = self.ops.create(PODS, str(meta.get("namespace")), {"metadata": pod_meta, "spec": pod_spec})
        assert isinstance(created, StoredObject)
        self._schedule_lifecycle(created.obj)
        return created

    def _delete_pod(self, pod: StoredObject) -> None:
        try:
            self.ops.delete(PODS, pod.namespace, pod.name)
        except errors.ApiError as problem:
            if problem.code != 404:
                raise

    # --- pod lifecycle ---------------------------------------------------------------------------

    def _schedule_lifecycle(self, pod: JsonObject) -> None:
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

    async def _run_timers(self) -> None:
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

    # --- workload status -------------------------------------------------------------------------

    def _write_status(self, resource_type: ResourceType, stored: StoredObject, revision: str) -> None:
        workload = stored.obj
        meta, spec = workload["metadata"], workload.get("spec") or {}
        desired = int(spec.get("replicas", 1) or 0)
        pods = [
            p
            for p in self._owned_pods(stored.namespace, str(meta["uid"]), spec.get("selector"))
            if not p.obj["metadata"].get("deletionTimestamp")
        ]
        updated = [p for p in pods if self._revision_of(resource_type, p.obj) == revision]
        ready = sum(1 for p in pods if is_ready(p.obj))
        previous = workload.get("status") or {}
        counts: dict[str, int] = {
            "replicas": len(pods),
            "updatedReplicas": len(updated),
            "readyReplicas": ready,
            "availableReplicas": ready,
        }
        if resource_type.kind == "Deployment":
            counts["unavailableReplicas"] = max(0, desired - ready)
        elif resource_type.kind == "StatefulSet":
            counts["currentReplicas"] = len(updated)
        else:
            counts["fullyLabeledReplicas"] = len(pods)
        status: JsonObject = {"observedGeneration": meta.get("generation", 1)}
        status.update({field: value for field, value in counts.items() if value})
        if resource_type.kind in ("ReplicaSet", "StatefulSet"):
            status["replicas"] = len(pods)  # not omitempty on these status types
        if resource_type.kind == "StatefulSet":
            status["availableReplicas"] = ready
        if resource_type.kind == "StatefulSet":
            status["currentRevision"] = status["updateRevision"] = f"{meta['name']}-{revision}"
            status["collisionCount"] = 0
        if resource_type.kind == "Deployment":
            available = ready >= desired
            status["conditions"] = [
                self._condition(
                    previous,
                    "Available",
                    available,
                    "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                    "Deployment has minimum availability."
                    if available
                    else "Deployment does not have minimum availability.",
                ),
                self._condition(
                    previous,
                    "Progressing",
                    True,
                    "NewReplicaSetAvailable" if len(updated) == len(pods) and available else "ReplicaSetUpdated",
                    f'ReplicaSet "{meta["name"]}-{revision}" is progressing.',
                ),
            ]
        if json_equal(status, previous):
            return
        self.ops.update(
            resource_type,
            stored.namespace,
            stored.name,
            {"metadata": {"name": stored.name}, "status": status},
            subresource="status",
        )

    def _condition(self, previous_status: JsonObject, kind: str, value: bool, reason: str, message: str) -> JsonObject:
        now = format_time(self.clock.now())
        before = next((c for c in previous_status.get("conditions") or [] if c.get("type") == kind), None)
        status = "True" if value else "False"
        transitioned = before is None or before.get("status") != status
        updated = transitioned or before is None or before.get("reason") != reason
        return {
            "type": kind,
            "status": status,
            "lastUpdateTime": now if updated or before is None else before.get("lastUpdateTime", now),
            "lastTransitionTime": now if transitioned or before is None else before.get("lastTransitionTime", now),
            "reason": reason,
            "message": message,
        }


def _ordinal(pod_name: str) -> int:
    suffix = pod_name.rsplit("-", 1)[-1]
    return int(suffix) if suffix.isdigit() else -1
