"""DELETE and deletecollection with the API server's semantics: preconditions, finalizers, namespaces.

:class:`ObjectDeletes` is the part of :class:`~kube_emulator.operations.ApiOperations` that removes objects.
An object with finalizers is only marked (``deletionTimestamp``) until the last one goes (an update then
removes it, in :mod:`kube_emulator.operations`); deleting a namespace deletes its contents at once, as the
namespace controller would eventually. Like every verb, each runs synchronously from its read to its commit.
"""

from __future__ import annotations

from kube_emulator import errors, strategies
from kube_emulator.clock import format_time
from kube_emulator.jsonutil import JsonObject, clone
from kube_emulator.reads import ListResult, ObjectReads, Served
from kube_emulator.resources import ResourceType
from kube_emulator.selectors import EVERYTHING, FieldSelector, LabelSelector
from kube_emulator.watch import StoredObject


class ObjectDeletes(ObjectReads):
    def delete(
        self,
        resource_type: ResourceType,
        namespace: str,
        name: str,
        options: JsonObject | None = None,
        *,
        dry_run: bool = False,
    ) -> Served:
        """DELETE: immediate, or a soft delete (deletionTimestamp) while finalizers remain."""
        current = self._existing(resource_type, namespace, name)
        check_delete_preconditions(resource_type, current, (options or {}).get("preconditions") or {})
        if dry_run:
            return self.present(resource_type, current)
        meta = current.obj["metadata"]
        if resource_type.storage_key == strategies.NAMESPACES:
            self._delete_namespace_contents(name)
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return self.present(resource_type, current)
            marked = clone(current.obj)
            marked["metadata"]["deletionTimestamp"] = format_time(self.clock.now())
            marked["metadata"]["deletionGracePeriodSeconds"] = 0
            if isinstance(meta.get("generation"), int):
                marked["metadata"]["generation"] = meta["generation"] + 1
            return self.present(resource_type, self.store.write(resource_type.storage_key, marked))
        removed = self.store.remove(resource_type.storage_key, current.namespace, current.name)
        assert removed is not None
        if resource_type.delete_returns_object:
            return self.present(resource_type, removed)
        details = {
            "name": name,
            "group": resource_type.group,
            "kind": resource_type.plural,
            "uid": meta.get("uid"),
        }
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    def _delete_namespace_contents(self, namespace: str) -> None:
        # The namespace controller's job, done at once and ignoring finalizers.
        namespaced_keys = {rt.storage_key for rt in self.registry if rt.namespaced}
        for storage_key in namespaced_keys:
            for stored in self.store.list(storage_key, namespace):
                self.store.remove(storage_key, namespace, stored.name)

    def delete_collection(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        labels: LabelSelector = EVERYTHING,
        fields: FieldSelector | None = None,
        options: JsonObject | None = None,
        *,
        dry_run: bool = False,
    ) -> ListResult:
        listed = self.list(resource_type, namespace, labels, fields)
        deleted: list[Served] = []
        for served in listed.items:
            obj = served.obj if isinstance(served, StoredObject) else served
            meta = obj["metadata"]
            try:
                deleted.append(
                    self.delete(resource_type, meta.get("namespace", ""), meta["name"], options, dry_run=dry_run)
                )
            except errors.ApiError as problem:
                if problem.code != 404:
                    raise
        return ListResult(deleted, self.store.resource_version)


def check_delete_preconditions(resource_type: ResourceType, current: StoredObject, preconditions: JsonObject) -> None:
    meta = current.obj["metadata"]
    uid, version = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != meta.get("uid"):
        raise errors.conflict(
            resource_type.plural,
            resource_type.group,
            current.name,
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}",
        )
    if version and version != meta.get("resourceVersion"):
        raise errors.conflict(
            resource_type.plural,
            resource_type.group,
            current.name,
            f"Precondition failed: ResourceVersion in precondition: {version}, "
            f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
        )
