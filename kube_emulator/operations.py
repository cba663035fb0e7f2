"""The API verbs with real API-server semantics, independent of HTTP.

The HTTP layer (:mod:`kube_emulator.app`) and the in-process API
(:class:`kube_emulator.server.KubeEmulator`) both call these, so an object written
either way gets the same resourceVersion, generation, status and watch-event treatment.

Every method runs synchronously from its first read to its commit: there is no ``await``
in between, so concurrent requests are serialised exactly as etcd's compare-and-swap
would order them, and a stale write loses with 409 Conflict.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from kube_emulator import crds, errors, managedfields, strategies, structural
from kube_emulator.clock import Clock, format_time
from kube_emulator.govalues import quote
from kube_emulator.jsonutil import JsonObject, clone, json_equal, metadata
from kube_emulator.patches import (
    APPLY_PATCH,
    BUILTIN_PATCH_TYPES,
    CUSTOM_RESOURCE_PATCH_TYPES,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    PatchError,
    apply_json_patch,
    apply_merge_patch,
)
from kube_emulator.resources import ResourceRegistry, ResourceType
from kube_emulator.scale import scale_of, with_replicas
from kube_emulator.selectors import EVERYTHING, FieldSelector, LabelSelector, field_value
from kube_emulator.store import ObjectStore
from kube_emulator.strategic_merge import apply_strategic_merge_patch, schema_for
from kube_emulator.watch import ObjectFilter, StoredObject

Served = StoredObject | JsonObject
"""An object as an endpoint serves it: the stored version itself when no rewriting is needed
(so its cached encoding is reused), else a converted dict."""

_GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_ALWAYS_SELECTABLE = frozenset({"metadata.name", "metadata.namespace"})


def as_dict(served: Served) -> JsonObject:
    """A private copy of a served object."""
    return clone(served.obj if isinstance(served, StoredObject) else served)  # type: ignore[no-any-return]


FIELD_VALIDATIONS = ("Ignore", "Warn", "Strict")


@dataclass(slots=True)
class WriteOptions:
    """What a create, update or patch request says beyond its body (query parameters), and what it is told."""

    field_validation: str = "Warn"
    """Unknown fields of a custom resource: ``Strict`` is a 400, ``Warn`` a warning, ``Ignore`` silent."""
    field_manager: str | None = None
    force: bool = False
    """Server-side apply takes fields other managers own instead of failing with a conflict."""
    user_agent: str = ""
    """Names the manager of a write without ``fieldManager``, as the API server does."""
    warnings: list[str] = field(default_factory=list)
    """Collected for the ``Warning`` response headers."""
    managed: list[managedfields.Entry] | None = None
    """Ownership an apply has already settled (the write then stores it as is)."""

    def manager(self) -> str:
        """``fieldManager``, else the User-Agent up to its first ``/`` (what the API server records)."""
        return self.field_manager or self.user_agent.split("/", 1)[0][:128] or "unknown"


@dataclass(frozen=True, slots=True)
class ListResult:
    items: list[Served]
    resource_version: int
    continue_token: str | None = None
    remaining: int | None = None


class ApiOperations:
    def __init__(
        self,
        store: ObjectStore,
        registry: ResourceRegistry,
        clock: Clock,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.registry = registry
        self.clock = clock
        self._rng = rng or random.Random()

    # --- presentation ----------------------------------------------------------------------------

    def present(self, resource_type: ResourceType, stored: StoredObject) -> Served:
        if resource_type.converter is not None:
            return resource_type.converter.from_storage(stored.obj)
        if stored.obj.get("apiVersion") != resource_type.api_version:
            return {**stored.obj, "apiVersion": resource_type.api_version}
        return stored

    def _present_dict(self, resource_type: ResourceType, obj: JsonObject) -> JsonObject:
        if resource_type.converter is not None:
            return resource_type.converter.from_storage(obj)
        return {**obj, "apiVersion": resource_type.api_version}

    # --- reads -----------------------------------------------------------------------------------

    def get(self, resource_type: ResourceType, namespace: str, name: str) -> Served:
        return self.present(resource_type, self._existing(resource_type, namespace, name))

    def _existing(self, resource_type: ResourceType, namespace: str, name: str) -> StoredObject:
        stored = self.store.get(resource_type.storage_key, namespace if resource_type.namespaced else "", name)
        if stored is None:
            raise errors.not_found(resource_type.plural, resource_type.group, name)
        return stored

    def matcher(self, resource_type: ResourceType, labels: LabelSelector, fields: FieldSelector) -> ObjectFilter | None:
        """A predicate for list/watch filtering, or ``None`` when everything matches.

        Field selectors are evaluated on the served representation, so ``regarding.name``
        works on events.k8s.io Events stored as core/v1.
        """
        unsupported = fields.fields() - _ALWAYS_SELECTABLE - resource_type.selectable_fields
        if unsupported:
            raise errors.bad_request(f"field label not supported: {sorted(unsupported)[0]}")
        if labels.is_empty() and not fields.requirements:
            return None
        converter = resource_type.converter

        def accepts(stored: StoredObject) -> bool:
            if not labels.matches(stored.labels):
                return False
            if not fields.requirements:
                return True
            obj = converter.from_storage(stored.obj) if converter else stored.obj
            return fields.matches(lambda field: field_value(obj, field))

        return accepts

    def list(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        labels: LabelSelector = EVERYTHING,
        fields: FieldSelector | None = None,
        *,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> ListResult:
        fields = fields or FieldSelector()
        accepts = self.matcher(resource_type, labels, fields)
        resource_version = self.store.resource_version
        scope = namespace if resource_type.namespaced else None
        pinned_name = fields.exact("metadata.name")
        if pinned_name is not None and (scope is not None or not resource_type.namespaced):
            # A single-object list (how clients watch one object) needs no scan.
            found = self.store.get(resource_type.storage_key, scope or "", pinned_name)
            candidates = [found] if found else []
        else:
            candidates = self.store.list(resource_type.storage_key, scope, labels)
        if accepts is not None and fields.requirements:
            candidates = [stored for stored in candidates if accepts(stored)]
        if continue_token:
            resource_version, start_after = _decode_continue(continue_token)
            # candidates are in (namespace, name) order: the page starts right after the last one sent
            first = bisect.bisect_right(candidates, start_after, key=lambda stored: (stored.namespace, stored.name))
            candidates = candidates[first:]
        token, remaining = None, None
        if limit and len(candidates) > limit:
            remaining = len(candidates) - limit
            candidates = candidates[:limit]
            last = candidates[-1]
            token = _encode_continue(resource_version, (last.namespace, last.name))
        return ListResult(
            [self.present(resource_type, stored) for stored in candidates], resource_version, token, remaining
        )

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
        obj = self._incoming(resource_type, body)
        self._apply_schema(resource_type, obj, options)
        meta = obj["metadata"]
        namespace = self._settle_namespace(resource_type, namespace, meta)
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
        self._track(resource_type, None, obj, options, "")
        if self.store.get(resource_type.storage_key, namespace, name) is not None:
            raise errors.already_exists(resource_type.plural, resource_type.group, name)
        if dry_run:
            return self._present_dict(resource_type, obj)
        return self.present(resource_type, self.store.write(resource_type.storage_key, obj))

    def _incoming(self, resource_type: ResourceType, body: Any) -> JsonObject:
        """A private, storage-shaped copy of a request body, checked against the endpoint."""
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        obj: JsonObject = clone(body)
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if kind and kind != resource_type.kind:
            raise errors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({resource_type.kind})"
            )
        if api_version and api_version != resource_type.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({resource_type.api_version})"
            )
        obj["apiVersion"], obj["kind"] = resource_type.api_version, resource_type.kind
        if resource_type.converter is not None:
            obj = resource_type.converter.to_storage(obj)
        if obj.get("metadata") is not None and not isinstance(obj.get("metadata"), dict):
            raise errors.bad_request("metadata must be an object")
        metadata(obj)
        return obj

    def _settle_namespace(self, resource_type: ResourceType, namespace: str | None, meta: JsonObject) -> str:
        if not resource_type.namespaced:
            meta.pop("namespace", None)
            return ""
        declared = meta.get("namespace")
        if namespace is None:
            namespace = str(declared or "default")
        elif declared and declared != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace
        return namespace

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
        incoming = self._incoming(resource_type, body)
        self._apply_schema(resource_type, incoming, options)
        meta = incoming["metadata"]
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        if resource_type.namespaced and meta.get("namespace") and meta["namespace"] != current.namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        self._check_resource_version(resource_type, current, meta.get("resourceVersion"), required=not _from_patch)
        if subresource == "status":
            new = clone(current.obj)
            if "status" in incoming:
                new["status"] = incoming["status"]
            else:
                new.pop("status", None)
        else:
            new = incoming
            self._carry_server_fields(resource_type, current.obj, new)
        self._track(resource_type, current.obj, new, options, subresource or "")
        return self._finish_update(resource_type, current, new, dry_run=dry_run)

    def _ownership_root(self, resource_type: ResourceType) -> managedfields.Node:
        if resource_type.builtin:
            return managedfields.Node(strategic=schema_for(resource_type.storage_key))
        return managedfields.Node(schema=resource_type.schema or {})

    def _track(
        self,
        resource_type: ResourceType,
        old: JsonObject | None,
        new: JsonObject,
        options: WriteOptions,
        subresource: str,
    ) -> None:
        """Record in ``new`` who owns which fields after this write (see :mod:`.managedfields`)."""
        if options.managed is not None:
            managedfields.write_entries(new, options.managed)
            return
        if options.field_manager is None and not (old is not None and old["metadata"].get("managedFields")):
            return
        entries = managedfields.read_entries(old) if old is not None else []
        managedfields.record_update(
            entries,
            old,
            new,
            self._ownership_root(resource_type),
            manager=options.manager(),
            subresource=subresource,
            api_version=resource_type.api_version,
            time=format_time(self.clock.now()),
        )
        managedfields.write_entries(new, entries)

    def _apply_schema(self, resource_type: ResourceType, obj: JsonObject, options: WriteOptions) -> None:
        """A custom resource's structural schema on a body: prune (or refuse) unknown fields, fill defaults."""
        schema = resource_type.schema
        if schema is None:
            return
        dropped = structural.prune(obj, schema)
        if dropped and options.field_validation == "Strict":
            unknown = ", ".join(f"unknown field {quote(path)}" for path in dropped)
            kind, version = resource_type.kind, resource_type.version
            raise errors.bad_request(
                f"{kind} in version {quote(version)} cannot be handled as a {kind}: strict decoding error: {unknown}"
            )
        if options.field_validation == "Warn":
            options.warnings.extend(f"unknown field {quote(path)}" for path in dropped)
        structural.apply_defaults(obj, schema)

    def _check_resource_version(
        self, resource_type: ResourceType, current: StoredObject, requested: Any, *, required: bool
    ) -> None:
        if requested in (None, ""):
            if required and not resource_type.allow_unconditional_update:
                raise errors.invalid(
                    resource_type.kind,
                    resource_type.group,
                    current.name,
                    [
                        errors.invalid_value(
                            "metadata.resourceVersion", None, "must be specified for an update", shown="0x0"
                        )
                    ],
                )
            return
        if str(requested) != current.obj["metadata"]["resourceVersion"]:
            raise errors.conflict(resource_type.plural, resource_type.group, current.name)

    @staticmethod
    def _carry_server_fields(resource_type: ResourceType, old: JsonObject, new: JsonObject) -> None:
        """What a write to the main resource cannot change: identity, deletion state, status."""
        meta, old_meta = new["metadata"], old["metadata"]
        for server_field in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
        ):
            if server_field in old_meta:
                meta[server_field] = old_meta[server_field]
            else:
                meta.pop(server_field, None)
        meta["name"] = old_meta["name"]
        if "namespace" in old_meta:
            meta["namespace"] = old_meta["namespace"]
        if resource_type.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        strategies.apply_defaults(resource_type, new)
        if resource_type.storage_key == crds.CRD_STORAGE_KEY:
            new["status"] = crds.crd_status(new)

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
        self._check_patch_type(resource_type, content_type)
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
                    self._settle_apply(resource_type, None, body, options, "")
                return self.create(resource_type, namespace, body, dry_run=dry_run, options=options), True
            raise errors.not_found(resource_type.plural, resource_type.group, name)
        base = as_dict(self.present(resource_type, current))
        stale: set[managedfields.FieldPath] = set()
        if content_type == APPLY_PATCH and isinstance(patch, dict):
            stale = self._settle_apply(resource_type, current.obj, patch, options, subresource or "")
        patched = self._apply_patch(resource_type, content_type, base, patch)
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

    def _settle_apply(
        self,
        resource_type: ResourceType,
        live: JsonObject | None,
        applied: JsonObject,
        options: WriteOptions,
        subresource: str,
    ) -> set[managedfields.FieldPath]:
        entries = managedfields.read_entries(live) if live is not None else []
        stale = managedfields.plan_apply(
            entries,
            live,
            applied,
            self._ownership_root(resource_type),
            manager=options.manager(),
            subresource=subresource,
            force=options.force,
            api_version=resource_type.api_version,
            time=format_time(self.clock.now()),
        )
        options.managed = entries
        return stale

    @staticmethod
    def _check_patch_type(resource_type: ResourceType, content_type: str) -> None:
        accepted = BUILTIN_PATCH_TYPES if resource_type.builtin else CUSTOM_RESOURCE_PATCH_TYPES
        if content_type not in accepted:
            raise errors.unsupported_media_type(content_type, accepted)

    @staticmethod
    def _apply_patch(resource_type: ResourceType, content_type: str, base: JsonObject, patch: Any) -> Any:
        if content_type == JSON_PATCH:
            if not isinstance(patch, list):
                raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        elif not isinstance(patch, dict):
            raise errors.bad_request(f"a {content_type} body must be a JSON object")
        try:
            if content_type == JSON_PATCH:
                return apply_json_patch(base, patch)
            if content_type == MERGE_PATCH:
                return apply_merge_patch(base, patch)
            if content_type == STRATEGIC_MERGE_PATCH:
                return apply_strategic_merge_patch(base, patch, schema_for(resource_type.storage_key))
            # Server-side apply, approximated: the applied configuration is merged in (strategic
            # for built-in kinds); field ownership and conflict detection are not modelled.
            if resource_type.builtin:
                return apply_strategic_merge_patch(base, patch, schema_for(resource_type.storage_key))
            return apply_merge_patch(base, patch)
        except PatchError as problem:
            raise errors.unprocessable(str(problem)) from problem

    # --- delete ----------------------------------------------------------------------------------

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
        self._check_delete_preconditions(resource_type, current, (options or {}).get("preconditions") or {})
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

    @staticmethod
    def _check_delete_preconditions(
        resource_type: ResourceType, current: StoredObject, preconditions: JsonObject
    ) -> None:
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
        self._check_resource_version(resource_type, current, meta.get("resourceVersion"), required=False)
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
        self._track(resource_type, current.obj, new, options or WriteOptions(), "scale")
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
        patched = self._apply_patch(resource_type, content_type, scale, patch)
        return self.update_scale(resource_type, namespace, name, patched, dry_run=dry_run, options=options)

    # --- seeding (in-process, no HTTP semantics) -------------------------------------------------

    def seed(self, resource_type: ResourceType, body: Any) -> StoredObject:
        """Create or replace an object as a controller might have left it: status is kept, the
        namespace is created if missing, nothing is validated. Server fields are filled in."""
        obj = self._incoming(resource_type, body)
        meta = obj["metadata"]
        namespace = self._settle_namespace(resource_type, meta.get("namespace"), meta)
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


# --- continue tokens ----------------------------------------------------------------------------------


def _encode_continue(resource_version: int, after: tuple[str, str]) -> str:
    raw = json.dumps({"rv": resource_version, "start": list(after)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, name = decoded["start"]
        return int(decoded["rv"]), (str(namespace), str(name))
    except (ValueError, KeyError, TypeError, binascii.Error) as problem:
        raise errors.bad_request(f"continue key is not valid: {problem}") from problem
