"""Strategic merge patch for built-in kinds (``application/strategic-merge-patch+json``).

The real server reads patch strategies from Go struct tags; here the few list fields whose
strategy differs from "replace" are described by a small schema per kind. That covers the
fields an autoscaler touches (containers and their env/ports/volumeMounts merged by key,
conditions merged by ``type``, finalizers merged as a set) plus the directives ``$patch``
(replace/delete/merge), ``$retainKeys``, ``$deleteFromPrimitiveList/…`` and
``$setElementOrder/…`` (accepted; ordering is not enforced).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kube_emulator.jsonutil import JsonObject, clone
from kube_emulator.patches import PatchError


@dataclass(frozen=True)
class Schema:
    """Patch strategy of one field: child fields for maps, a merge key or set semantics for lists."""

    fields: Mapping[str, Schema] = field(default_factory=dict)
    merge_key: str | None = None
    set_merge: bool = False
    items: Schema | None = None


ANY = Schema()


def _map(**fields: Schema) -> Schema:
    return Schema(fields=fields)


def _keyed(key: str, items: Schema = ANY) -> Schema:
    return Schema(merge_key=key, items=items)


SET = Schema(set_merge=True)
CONDITIONS = _keyed("type")
METADATA = _map(finalizers=SET, ownerReferences=_keyed("uid"))
CONTAINER = _map(
    ports=_keyed("containerPort"),
    env=_keyed("name"),
    volumeMounts=_keyed("mountPath"),
    volumeDevices=_keyed("devicePath"),
)
POD_SPEC = _map(
    containers=_keyed("name", CONTAINER),
    initContainers=_keyed("name", CONTAINER),
    ephemeralContainers=_keyed("name", CONTAINER),
    volumes=_keyed("name"),
    imagePullSecrets=_keyed("name"),
    hostAliases=_keyed("ip"),
    topologySpreadConstraints=_keyed("topologyKey"),
    resourceClaims=_keyed("name"),
    schedulingGates=_keyed("name"),
)
POD_TEMPLATE = _map(metadata=METADATA, spec=POD_SPEC)
WORKLOAD = _map(metadata=METADATA, spec=_map(template=POD_TEMPLATE), status=_map(conditions=CONDITIONS))

SCHEMAS: Mapping[str, Schema] = {
    "/pods": _map(
        metadata=METADATA,
        spec=POD_SPEC,
        status=_map(conditions=CONDITIONS, podIPs=_keyed("ip"), hostIPs=_keyed("ip")),
    ),
    "apps/deployments": WORKLOAD,
    "apps/statefulsets": WORKLOAD,
    "apps/replicasets": WORKLOAD,
    "/services": _map(metadata=METADATA, spec=_map(ports=_keyed("port")), status=_map(conditions=CONDITIONS)),
    "/nodes": _map(metadata=METADATA, status=_map(conditions=CONDITIONS, addresses=_keyed("type"))),
    "/namespaces": _map(metadata=METADATA, status=_map(conditions=CONDITIONS)),
    "apiextensions.k8s.io/customresourcedefinitions": _map(metadata=METADATA, status=_map(conditions=CONDITIONS)),
}
DEFAULT_SCHEMA = _map(metadata=METADATA)


def schema_for(storage_key: str) -> Schema:
    return SCHEMAS.get(storage_key, DEFAULT_SCHEMA)


def apply_strategic_merge_patch(original: JsonObject, patch: Any, schema: Schema) -> JsonObject:
    """Apply ``patch`` to a copy of ``original`` (which is not modified)."""
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch must be a JSON object")
    return _merge_map(clone(original), patch, schema)


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _strip_directives(item) for key, item in value.items() if not key.startswith("$")}
    if isinstance(value, list):
        return [_strip_directives(item) for item in value if not _is_directive_element(item)]
    return value


def _is_directive_element(item: Any) -> bool:
    return isinstance(item, dict) and "$patch" in item and len(item) == 1


def _merge_map(original: JsonObject, patch: JsonObject, schema: Schema) -> JsonObject:
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip_directives(clone(patch))  # type: ignore[no-any-return]
    if directive not in (None, "merge", "delete"):
        raise PatchError(f"unknown patch type {directive!r}")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            target = key.split("/", 1)[1]
            if isinstance(original.get(target), list) and isinstance(value, list):
                original[target] = [item for item in original[target] if item not in value]
            continue
        child = schema.fields.get(key, ANY)
        if value is None:
            original.pop(key, None)
        elif isinstance(value, dict):
            if value.get("$patch") == "delete":
                original.pop(key, None)
                continue
            existing = original.get(key)
            original[key] = _merge_map(existing if isinstance(existing, dict) else {}, value, child)
        elif isinstance(value, list):
            existing = original.get(key)
            original[key] = _merge_list(existing if isinstance(existing, list) else [], value, child)
        else:
            original[key] = value
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        for key in [key for key in original if key not in retain]:
            del original[key]
    return original


def _merge_list(original: list[Any], patch: list[Any], schema: Schema) -> list[Any]:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [_strip_directives(clone(item)) for item in patch if not _is_directive_element(item)]
    if schema.set_merge:
        merged = list(original)
        for item in patch:
            if item not in merged:
                merged.append(clone(item))
        return merged
    key = schema.merge_key
    if key is None:
        return _strip_directives(clone(patch))  # type: ignore[no-any-return]
    merged = list(original)
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"the list is merged by {key!r}, so its elements must be objects, got {item!r}")
        if key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        position = next(
            (
                index
                for index, existing in enumerate(merged)
                if isinstance(existing, dict) and existing.get(key) == item[key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            merged = [e for e in merged if not (isinstance(e, dict) and e.get(key) == item[key])]
        elif position is None:
            merged.append(_merge_map({}, item, schema.items or ANY))
        else:
            merged[position] = _merge_map(clone(merged[position]), item, schema.items or ANY)
    return merged
