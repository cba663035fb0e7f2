"""The rules a write applies to what it is sent, before it commits: pure functions of the request and the
object it changes.

A body is checked against its endpoint and made storage-shaped (:func:`incoming`), put in its namespace
(:func:`settle_namespace`), pruned and defaulted by a custom resource's schema (:func:`apply_schema`); a
PUT keeps what only the server may set (:func:`carry_server_fields`) and loses to a newer write
(:func:`check_resource_version`); a PATCH body is merged by its content type (:func:`apply_patch`). The
verbs that call these, and own the read-to-commit sequence, are in :mod:`kube_emulator.operations`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kube_emulator import crds, errors, managedfields, strategies, structural
from kube_emulator.govalues import quote
from kube_emulator.jsonutil import JsonObject, clone, metadata
from kube_emulator.patches import (
    BUILTIN_PATCH_TYPES,
    CUSTOM_RESOURCE_PATCH_TYPES,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    PatchError,
    apply_json_patch,
    apply_merge_patch,
)
from kube_emulator.resources import ResourceType
from kube_emulator.strategic_merge import apply_strategic_merge_patch, schema_for
from kube_emulator.watch import StoredObject

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


# --- the body ----------------------------------------------------------------------------------------


def incoming(resource_type: ResourceType, body: Any) -> JsonObject:
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


def settle_namespace(resource_type: ResourceType, namespace: str | None, meta: JsonObject) -> str:
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


def apply_schema(resource_type: ResourceType, obj: JsonObject, options: WriteOptions) -> None:
    """A custom resource's structural schema on a body: prune (or refuse) unknown fields, fill defaults,
    whole floats as integers."""
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
    structural.go_numbers(obj)


# --- against the stored object -------------------------------------------------------------------------


def check_resource_version(
    resource_type: ResourceType, current: StoredObject, requested: Any, *, required: bool
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


def carry_server_fields(resource_type: ResourceType, old: JsonObject, new: JsonObject) -> None:
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


# --- patches -------------------------------------------------------------------------------------------


def check_patch_type(resource_type: ResourceType, content_type: str) -> None:
    accepted = BUILTIN_PATCH_TYPES if resource_type.builtin else CUSTOM_RESOURCE_PATCH_TYPES
    if content_type not in accepted:
        raise errors.unsupported_media_type(content_type, accepted)


def apply_patch(resource_type: ResourceType, content_type: str, base: JsonObject, patch: Any) -> Any:
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
        # Server-side apply: the applied configuration is merged in (strategic for built-in kinds); who
        # owns what, and the conflicts, were settled before (kube_emulator.ownership.settle_apply).
        if resource_type.builtin:
            return apply_strategic_merge_patch(base, patch, schema_for(resource_type.storage_key))
        return apply_merge_patch(base, patch)
    except PatchError as problem:
        raise errors.unprocessable(str(problem)) from problem
