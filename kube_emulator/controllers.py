"""Controllers-lite: just enough of kube-controller-manager and the kubelet to make workloads
look alive. Off by default; pass them to ``KubeEmulator(controllers=[...])``.

:class:`WorkloadController` keeps each Deployment / StatefulSet / ReplicaSet's pods in step
with ``spec.replicas`` and its ``status`` in step with its pods:

* pods carry the template's labels, annotations and spec (container requests included) and
  an owner reference to the workload (Deployments own their pods directly: no ReplicaSets);
  their bodies, deletion order and the workload's status are :mod:`kube_emulator.workloads`' rules;
* a pod goes Pending → Running (``startTime``, containers started, not ready) after
  ``start_delay`` → Ready (``Ready`` condition with its transition time) after
  ``ready_delay``, measured on the emulator's clock, so a :class:`ManualClock` runs it in
  zero wall time (:class:`~kube_emulator.kubelet.Kubelet`);
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
from typing import TYPE_CHECKING

from kube_emulator import errors
from kube_emulator.builtin_kinds import PODS
from kube_emulator.clock import Clock
from kube_emulator.jsonutil import JsonObject, json_equal
from kube_emulator.kubelet import Kubelet, PodLifecycle, is_ready
from kube_emulator.operations import ApiOperations
from kube_emulator.resources import ResourceType
from kube_emulator.selectors import selector_from_label_selector
from kube_emulator.watch import StoredObject, WatchEvent
from kube_emulator.workloads import controller_of, deletion_order, new_pod, revision_of, template_hash, workload_status

if TYPE_CHECKING:
    from kube_emulator.server import KubeEmulator

WorkKey = tuple[str, str, str]
"""``(storage key, namespace, name)`` of a workload."""


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
        self._kubelet = Kubelet(self.lifecycle)
        self._tasks: list[asyncio.Task[None]] = []
        self._deleted_uids: dict[WorkKey, str] = {}

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self, emulator: KubeEmulator) -> None:
        self._ops = emulator.api
        self._clock = emulator.clock
        self._kubelet.start(emulator.api, emulator.clock)
        for kind in self._kinds:
            resource_type = emulator.registry.resolve(f"{kind}.apps")
            self._types[resource_type.storage_key] = resource_type
            emulator.store.add_listener(resource_type.storage_key, self._on_workload)
            for stored in emulator.store.list(resource_type.storage_key):
                self._enqueue((resource_type.storage_key, stored.namespace, stored.name))
        emulator.store.add_listener(PODS.storage_key, self._on_pod)
        self._tasks = [asyncio.create_task(self._work()), asyncio.create_task(self._kubelet.run())]

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
            if self._queue.empty() and not self._busy and not self._kubelet.due():
                return
            await asyncio.sleep(0)
        raise TimeoutError("the workload controller did not settle")

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
        owner = controller_of(event.current.obj)
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
        current = [p for p in pods if revision_of(resource_type, p.obj) == revision]
        old = [p for p in pods if revision_of(resource_type, p.obj) != revision]

        if len(current) < desired:
            for _ in range(desired - len(current)):
                pods.append(self._create_pod(resource_type, workload, revision, pods))
        elif len(current) > desired:
            for pod in deletion_order(resource_type, current)[: len(current) - desired]:
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

    def _create_pod(
        self, resource_type: ResourceType, workload: JsonObject, revision: str, existing: list[StoredObject]
    ) -> StoredObject:
        body = new_pod(resource_type, workload, revision, existing, self.lifecycle.node_name)
        created = self.ops.create(PODS, str(workload["metadata"].get("namespace")), body)
        assert isinstance(created, StoredObject)
        self._kubelet.schedule(created.obj)
        return created

    def _delete_pod(self, pod: StoredObject) -> None:
        try:
            self.ops.delete(PODS, pod.namespace, pod.name)
        except errors.ApiError as problem:
            if problem.code != 404:
                raise

    # --- workload status -------------------------------------------------------------------------

    def _write_status(self, resource_type: ResourceType, stored: StoredObject, revision: str) -> None:
        workload = stored.obj
        meta, spec = workload["metadata"], workload.get("spec") or {}
        pods = [
            p
            for p in self._owned_pods(stored.namespace, str(meta["uid"]), spec.get("selector"))
            if not p.obj["metadata"].get("deletionTimestamp")
        ]
        previous = workload.get("status") or {}
        status = workload_status(resource_type, workload, pods, revision, self.clock)
        if json_equal(status, previous):
            return
        self.ops.update(
            resource_type,
            stored.namespace,
            stored.name,
            {"metadata": {"name": stored.name}, "status": status},
            subresource="status",
        )
