"""The API verbs with real API-server semantics, independent of HTTP.

The HTTP layer (:mod:`kube_emulator.endpoints`) and the in-process API
(:class:`kube_emulator.server.KubeEmulator`) both call these, so an object written
either way gets the same resourceVersion, generation, status and watch-event treatment.

Every method runs synchronously from its first read to its commit: there is no ``await``
in between, so concurrent requests are serialised exactly as etcd's compare-and-swap
would order them, and a stale write loses with 409 Conflict.

:class:`ApiOperations` is the verbs' one entry point. This module holds create, update (PUT and
``/status``), patch, ``/scale`` and seeding: each verb's sequence from its read to its commit. GET and
LIST come from :class:`~kube_emulator.reads.ObjectReads`, DELETE from
:class:`~kube_emulator.deletion.ObjectDeletes`; the rules a write applies to its body are in
:mod:`kube_emulator.writes`, field ownership in :mod:`kube_emulator.ownership`.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from kube_emulator import crds, errors, managedfields, ownership, strategies, writes
from kube_emulator.clock import Clock, format_time
from kube_emulator.deletion import ObjectDeletes
from kube_emulator.jsonutil import JsonObject, clone, json_equal, metadata
from kube_emulator.patches import APPLY_PATCH
from kube_emulator.reads import Served, as_dict
from kube_emulator.resources import ResourceRegistry, ResourceType
from kube_emulator.scale import scale_of, with_replicas
from kube_emulator.store import ObjectStore
from kube_emulator.watch import StoredObject
from kube_emulator.writes import WriteOptions

_GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class ApiOperations(ObjectDeletes):
    def __init__(
        self,
        store: ObjectStore,
        registry: ResourceRegistry,
        clock: Clock,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(store, registry, clock)
        self._rng = rng or random.Random()

    # --- create ----------------------------------------------------------------------------------

    def create(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        body: Any,
        *,
        dry_run: bool = False,
        create_namespace: bool = False,
        options: WriteOptions | None = None,
    ) -> Served:
        options = options or WriteOptions()
        obj = writes.incoming(resource_type, body)
        writes.apply_schema(resource_type, obj, options)
        meta = obj["metadata"]
        namespace = writes.settle_namespace(resource_type, namespace, meta)
        if resource_type.namespaced:
            self._require_namespace(namespace, create=create_namespace)
        name = self._choose_name(resource_type, namespace, meta)
        meta.pop("resourceVersion", None)
        meta.pop("deletionTimestamp", None)
        meta.pop("deletionGracePeriodSeconds", None)
        meta["uid"] = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        meta["creationTimestamp"] = format_time(self.clock.now())
        if resource_type.has_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        meta.pop("managedFields", None)
        strategies.prepare_for_create(resource_type, obj)
        strategies.validate(resource_type, obj, None)
        ownership.track(resource_type, None, obj, options, "", self.clock)
        if self.store.get(resource_type.storage_key, namespace, name) is not None:
            raise errors.already_exists(resource_type.plural, resource_type.group, name)
        if dry_run:
            return self._present_dict(resource_type, obj)
        return self.present(resource_type, self.store.write(resource_type.storage_key, obj))

    def _require_namespace(self, namespace: str, *, create: bool) -> None:
        if self.store.get(strategies.NAMESPACES, "", namespace) is not None:
            return
        if not create:
            raise errors.not_found("namespaces", "", namespace)
        namespaces = self.registry.lookup("", "v1", "namespaces")
        assert namespaces is not None
        self.create(namespaces, None, {"metadata": {"name": namespace}})

    def _choose_name(self, resource_type: ResourceType, namespace: str, meta: JsonObject) -> str:
        name = meta.get("name")
        if not name:
            prefix = meta.get("generateName")
            if not prefix:
                raise errors.invalid(
                    resource_type.kind,
                    resource_type.group,
                    "",
                    [errors.required("metadata.name", "name or generateName is required")],
                )
            for _ in range(16):
                name = str(prefix) + "".join(self._rng.choice(_GENERATE_NAME_ALPHABET) for _ in range(5))
                if self.store.get(resource_type.storage_key, namespace, name) is None:
                    break
            meta["name"] = name
        problem = strategies.name_problem(resource_type, str(name))
        if problem:
            raise errors.invalid(resource_type.kind, resource_type.group, str(name), [problem])
        return str(name)

    # --- update ----------------------------------------------------------------------------------

    def update(
        self,
        resource_type: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        options: WriteOptions | None = None,
        _from_patch: bool = False,
    ) -> Served:
        """PUT on the object (``subresource=None``) or on ``/status``."""
        options = options or WriteOptions()
        current = self._existing(resource_type, namespace, name)
        incoming = writes.incoming(resource_type, body)
        writes.apply_schema(resource_type, incoming, options)
        meta = incoming["metadata"]
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        if resource_type.namespaced and meta.get("namespace") and meta["namespace"] != current.namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        writes.check_resource_version(resource_type, current, meta.get("resourceVersion"), required=not _from_patch)
        if subresource == "status":
            new = clone(current.obj)
            if "status" in incoming:
                new["status"] = incoming["status"]
            else:
                new.pop("status", None)
        else:
            new = incoming
            writes.carry_server_fields(resource_type, current.obj, new)
        ownership.track(resource_type, current.obj, new, options, subresource or "", self.clock)
        return self._finish_update(resource_type, current, new, dry_run=dry_run)

    def _finish_update(
        self, resource_type: ResourceType, current: StoredObject, new: JsonObject, *, dry_run: bool
    ) -> Served:
        meta = new["metadata"]
        meta["resourceVersion"] = current.obj["metadata"]["resourceVersion"]
        generation = current.obj["metadata"].get("generation")
        if resource_type.has_generation and isinstance(generation, int):
            changed = strategies.generation_changed(resource_type, current.obj, new)
            meta["generation"] = generation + 1 if changed else generation
        strategies.validate(resource_type, new, current.obj)
        if json_equal(new, current.obj):
            # A write that changes nothing is not a write: same resourceVersion, no watch event.
            return self.present(resource_type, current)
        if dry_run:
            return self._present_dict(resource_type, new)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            removed = self.store.remove(resource_type.storage_key, current.namespace, current.name, final=new)
            assert removed is not None
            return self.present(resource_type, removed)
        return self.present(resource_type, self.store.write(resource_type.storage_key, new))

    # --- patch -----------------------------------------------------------------------------------

    def patch(
        self,
        resource_type: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        options: WriteOptions | None = None,
    ) -> tuple[Served, bool]:
        """PATCH the object, ``/status`` or ``/scale``; returns the result and whether it was created
        (server-side apply creates missing objects)."""
        options = options or WriteOptions()
        writes.check_patch_type(resource_type, content_type)
        if content_type == APPLY_PATCH and not options.field_manager:
            raise errors.bad_request("PATCH requests require fieldManager to be set for apply patches")
        if subresource == "scale":
            return self.patch_scale(
                resource_type, namespace, name, content_type, patch, dry_run=dry_run, options=options
            ), False
        current = self.store.get(resource_type.storage_key, namespace if resource_type.namespaced else "", name)
        if current is None:
            if content_type == APPLY_PATCH and subresource is None:
                body = dict(patch) if isinstance(patch, dict) else patch
                if isinstance(body, dict):
                    ownership.settle_apply(resource_type, None, body, options, "", self.clock)
                return self.create(resource_type, namespace, body, dry_run=dry_run, options=options), True
            raise errors.not_found(resource_type.plural, resource_type.group, name)
        base = as_dict(self.present(resource_type, current))
        stale: set[managedfields.FieldPath] = set()
        if content_type == APPLY_PATCH and isinstance(patch, dict):
            stale = ownership.settle_apply(resource_type, current.obj, patch, options, subresource or "", self.clock)
        patched = writes.apply_patch(resource_type, content_type, base, patch)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patched object must be a JSON object")
        for path in sorted(stale, key=len, reverse=True):
            managedfields.remove(patched, path)
        meta = metadata(patched)
        if not meta.get("resourceVersion"):
            meta["resourceVersion"] = current.obj["metadata"]["resourceVersion"]
        result = self.update(
            resource_type,
            namespace,
            name,
            patched,
            subresource=subresource,
            dry_run=dry_run,
            options=options,
            _from_patch=True,
        )
        return result, False

    # --- scale -----------------------------------------------------------------------------------

    def _scale_subresource(self, resource_type: ResourceType) -> Any:
        if resource_type.scale is None:
            raise errors.resource_not_found()
        return resource_type.scale

    def get_scale(self, resource_type: ResourceType, namespace: str, name: str) -> JsonObject:
        subresource = self._scale_subresource(resource_type)
        return scale_of(subresource, self._existing(resource_type, namespace, name).obj)

    def update_scale(
        self,
        resource_type: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        *,
        dry_run: bool = False,
        options: WriteOptions | None = None,
    ) -> JsonObject:
        """PUT ``/scale``: only ``spec.replicas`` is taken; a stale resourceVersion is a 409."""
        subresource = self._scale_subresource(resource_type)
        current = self._existing(resource_type, namespace, name)
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        if body.get("kind") not in (None, "Scale"):
            raise errors.bad_request(
                f"the kind in the data ({body.get('kind')}) does not match the expected kind (Scale)"
            )
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        writes.check_resource_version(resource_type, current, meta.get("resourceVersion"), required=False)
        replicas = (body.get("spec") or {}).get("replicas", 0)  # omitted means 0 (omitempty)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.invalid(
                "Scale",
                "autoscaling",
                name,
                [errors.invalid_value("spec.replicas", replicas, "must be greater than or equal to 0")],
            )
        new = clone(current.obj)
        with_replicas(subresource, new, replicas)
        ownership.track(resource_type, current.obj, new, options or WriteOptions(), "scale", self.clock)
        result = self._finish_update(resource_type, current, new, dry_run=dry_run)
        return scale_of(subresource, result.obj if isinstance(result, StoredObject) else result)

    def patch_scale(
        self,
        resource_type: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        patch: Any,
        *,
        dry_run: bool = False,
        options: WriteOptions | None = None,
    ) -> JsonObject:
        scale = self.get_scale(resource_type, namespace, name)
        patched = writes.apply_patch(resource_type, content_type, scale, patch)
        return self.update_scale(resource_type, namespace, name, patched, dry_run=dry_run, options=options)

    # --- seeding (in-process, no HTTP semantics) -------------------------------------------------

    def seed(self, resource_type: ResourceType, body: Any) -> StoredObject:
        """Create or replace an object as a controller might have left it: status is kept, the
        namespace is created if missing, nothing is validated. Server fields are filled in."""
        obj = writes.incoming(resource_type, body)
        meta = obj["metadata"]
        namespace = writes.settle_namespace(resource_type, meta.get("namespace"), meta)
        if resource_type.namespaced:
            self._require_namespace(namespace, create=True)
        if not meta.get("name"):
            raise ValueError("a seeded object needs metadata.name")
        current = self.store.get(resource_type.storage_key, namespace, str(meta["name"]))
        if current is not None:
            old_meta = current.obj["metadata"]
            meta.setdefault("uid", old_meta.get("uid"))
            meta.setdefault("creationTimestamp", old_meta.get("creationTimestamp"))
            if resource_type.has_generation and "generation" not in meta:
                bump = strategies.generation_changed(resource_type, current.obj, obj)
                meta["generation"] = int(old_meta.get("generation") or 1) + (1 if bump else 0)
        else:
            meta.setdefault("uid", str(uuid.UUID(int=self._rng.getrandbits(128), version=4)))
            meta.setdefault("creationTimestamp", format_time(self.clock.now()))
            if resource_type.has_generation:
                meta.setdefault("generation", 1)
        if resource_type.storage_key == crds.CRD_STORAGE_KEY and "status" not in obj:
            obj["status"] = crds.crd_status(obj)
        return self.store.write(resource_type.storage_key, obj)
