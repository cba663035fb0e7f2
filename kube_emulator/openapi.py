"""OpenAPI v3 documents (``/openapi/v3`` and one per group-version), computed from the registry.

kubectl reads them for three things, and they are written for exactly those:

* ``kubectl apply``/``create`` validate "strict" by default: kubectl looks for a ``fieldValidation`` query
  parameter on the kind's PATCH operation and, finding it, leaves validation to the server (it then
  sends ``fieldValidation=Strict``); without these documents it falls back to the protobuf OpenAPI v2
  document and fails with "failed to download openapi";
* ``kubectl explain`` renders a kind's schema, found by its ``x-kubernetes-group-version-kind``; custom
  resources publish their CRD's structural schema, built-in kinds a stub (their schemas are not modelled);
* client-side apply picks its patch type from the PATCH operation's request body types: custom resources
  list merge and JSON patch (so kubectl sends a merge patch), built-in kinds list no strategic merge, so
  kubectl computes the strategic merge patch from its own compiled-in types.
"""

from __future__ import annotations

import hashlib
import json

from kube_emulator.jsonutil import JsonObject, clone
from kube_emulator.resources import ResourceRegistry, ResourceType

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_API_VERSION = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
    "recognized schemas to the latest internal value, and may reject unrecognized values."
)
_KIND = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer this "
    "from the endpoint the client submits requests to. Cannot be updated. In CamelCase."
)
_METADATA = "Standard object's metadata."
_FIELD_VALIDATION = (
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing "
    "unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict"
)
_OBJECT_META_SCHEMA: JsonObject = {
    "type": "object",
    "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects "
    "users must create.",
    "properties": {
        "name": {"type": "string", "description": "Name must be unique within a namespace."},
        "generateName": {"type": "string", "description": "An optional prefix used to generate a unique name."},
        "namespace": {"type": "string", "description": "The namespace the object is in."},
        "labels": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Map of string keys and values that can be used to organize and categorize objects.",
        },
        "annotations": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Unstructured key value map stored with a resource.",
        },
        "uid": {"type": "string", "description": "The unique in time and space value for this object."},
        "resourceVersion": {"type": "string", "description": "The version of this object, for concurrency."},
        "generation": {"type": "integer", "format": "int64", "description": "The generation of the desired state."},
        "creationTimestamp": {"type": "string", "format": "date-time", "description": "When it was created."},
        "finalizers": {"type": "array", "items": {"type": "string"}, "description": "Finalizers to run first."},
    },
}
# No strategic merge for any kind: see the module docstring.
_PATCH_BODY_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")


def schema_name(resource_type: ResourceType) -> str:
    """``io.k8s.api.apps.v1.Deployment``, ``dev.autoscaler.v1alpha1.ScalingTarget``."""
    if resource_type.builtin:
        group = resource_type.group.split(".")[0] or "core"
        return f"io.k8s.api.{group}.{resource_type.version}.{resource_type.kind}"
    reversed_group = ".".join(reversed(resource_type.group.split(".")))
    return f"{reversed_group}.{resource_type.version}.{resource_type.kind}"


def _gvk(resource_type: ResourceType) -> JsonObject:
    return {"group": resource_type.group, "version": resource_type.version, "kind": resource_type.kind}


def _object_schema(resource_type: ResourceType) -> JsonObject:
    if resource_type.schema is not None:
        schema: JsonObject = clone(resource_type.schema)
    else:
        schema = {
            "type": "object",
            "description": f"{resource_type.kind} (the emulator does not publish the schemas of built-in kinds).",
            "x-kubernetes-preserve-unknown-fields": True,
        }
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string", "description": _API_VERSION}
    properties["kind"] = {"type": "string", "description": _KIND}
    properties["metadata"] = {"allOf": [{"$ref": f"#/components/schemas/{OBJECT_META}"}], "description": _METADATA}
    schema["x-kubernetes-group-version-kind"] = [_gvk(resource_type)]
    return schema


def _operation(resource_type: ResourceType, action: str, patch_types: tuple[str, ...] = ()) -> JsonObject:
    operation: JsonObject = {
        "operationId": f"{action}{resource_type.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(resource_type),
        "parameters": [],
        "responses": {"200": {"description": "OK"}},
    }
    if action in ("post", "put", "patch"):
        operation["parameters"] = [
            {"name": "fieldValidation", "in": "query", "description": _FIELD_VALIDATION, "schema": {"type": "string"}},
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
        ]
        body_types = patch_types or ("application/json", "application/yaml")
        reference = {"$ref": f"#/components/schemas/{schema_name(resource_type)}"}
        operation["requestBody"] = {"content": {media: {"schema": reference} for media in body_types}}
    return operation


def _paths(resource_type: ResourceType) -> dict[str, JsonObject]:
    prefix = f"/apis/{resource_type.group}/{resource_type.version}" if resource_type.group else "/api/v1"
    scope = f"{prefix}/namespaces/{{namespace}}" if resource_type.namespaced else prefix
    collection = f"{scope}/{resource_type.plural}"
    item = f"{collection}/{{name}}"
    paths: dict[str, JsonObject] = {
        collection: {
            "get": _operation(resource_type, "list"),
            "post": _operation(resource_type, "post"),
            "delete": _operation(resource_type, "deletecollection"),
        },
        item: {
            "get": _operation(resource_type, "get"),
            "put": _operation(resource_type, "put"),
            "patch": _operation(resource_type, "patch", _PATCH_BODY_TYPES),
            "delete": _operation(resource_type, "delete"),
        },
    }
    for subresource in resource_type.subresources:
        paths[f"{item}/{subresource}"] = {
            "get": _operation(resource_type, "get"),
            "put": _operation(resource_type, "put"),
        }
    return paths


def _group_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def group_version_document(registry: ResourceRegistry, group: str, version: str, server_version: str) -> JsonObject:
    """The OpenAPI v3 document of one group-version (``None``-free: empty paths if nothing is served)."""
    paths: dict[str, JsonObject] = {}
    schemas: dict[str, JsonObject] = {OBJECT_META: _OBJECT_META_SCHEMA}
    for resource_type in sorted(registry.resources_in(group, version), key=lambda rt: rt.plural):
        paths.update(_paths(resource_type))
        schemas[schema_name(resource_type)] = _object_schema(resource_type)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": server_version},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _hash(document: JsonObject) -> str:
    encoded = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(encoded).hexdigest()[:128].upper()


def root_document(registry: ResourceRegistry, server_version: str) -> JsonObject:
    """``/openapi/v3``: each group-version's document, addressed with a content hash as kubectl caches them."""
    paths: dict[str, JsonObject] = {}
    for group, versions in registry.group_versions().items():
        for version in versions:
            document = group_version_document(registry, group, version, server_version)
            location = _group_path(group, version)
            paths[location] = {"serverRelativeURL": f"/openapi/v3/{location}?hash={_hash(document)}"}
    return {"paths": paths}


def lookup(registry: ResourceRegistry, path: str, server_version: str) -> JsonObject | None:
    """The document at ``/openapi/v3/<path>`` (``api/v1``, ``apis/apps/v1``), or ``None``."""
    parts = path.strip("/").split("/")
    if parts == [""]:
        return root_document(registry, server_version)
    if len(parts) == 2 and parts[0] == "api":
        group, version = "", parts[1]
    elif len(parts) == 3 and parts[0] == "apis":
        group, version = parts[1], parts[2]
    else:
        return None
    if version not in registry.group_versions().get(group, []):
        return None
    return group_version_document(registry, group, version, server_version)
