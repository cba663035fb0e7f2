"""CustomResourceDefinitions: validating them, and turning them into served resource types.

Creating a CRD (over HTTP or in-process) makes its served versions appear in discovery and
routing at once; deleting it removes them and drops every instance (the real server's
``customresourcecleanup`` finalizer, done immediately). Its schemas' CEL rules must compile.
"""

from __future__ import annotations

import re
from typing import Any

from kube_emulator import cel_rules
from kube_emulator.errors import FieldError, invalid_value, not_supported, required
from kube_emulator.jsonutil import JsonObject, parse_dotted_path
from kube_emulator.resources import PrinterColumn, ResourceRegistry, ResourceType, ScaleSubresource
from kube_emulator.store import ObjectStore
from kube_emulator.watch import WatchEvent

CRD_STORAGE_KEY = "apiextensions.k8s.io/customresourcedefinitions"
_LOWER_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def validate_crd(crd: JsonObject) -> list[FieldError]:
    """The checks of the real API server that a hand-written CRD most often trips over."""
    causes: list[FieldError] = []
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    group = spec.get("group")
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    assert isinstance(names, dict)
    plural, kind = names.get("plural"), names.get("kind")
    if not group:
        causes.append(required("spec.group"))
    elif "." not in str(group):
        causes.append(invalid_value("spec.group", group, "should be a domain with at least one dot"))
    if not plural:
        causes.append(required("spec.names.plural"))
    elif not _LOWER_DNS_LABEL.fullmatch(str(plural)):
        causes.append(invalid_value("spec.names.plural", plural, "a lowercase RFC 1123 label is required"))
    if not kind:
        causes.append(required("spec.names.kind"))
    name = crd.get("metadata", {}).get("name")
    if group and plural and name != f"{plural}.{group}":
        causes.append(invalid_value("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(not_supported("spec.scope", spec.get("scope"), ["Cluster", "Namespaced"]))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        causes.append(required("spec.versions", "must have exactly one version marked as storage version"))
    else:
        if sum(1 for version in versions if isinstance(version, dict) and version.get("storage")) != 1:
            causes.append(
                invalid_value(
                    "spec.versions",
                    None,
                    "must have exactly one version marked as storage version",
                    shown="[]apiextensions.CustomResourceDefinitionVersion{…}",
                )
            )
        for index, version in enumerate(versions):
            if not isinstance(version, dict) or not version.get("name"):
                causes.append(required(f"spec.versions[{index}].name"))
            elif isinstance(version.get("schema"), dict):
                schema_path = f"spec.versions[{index}].schema.openAPIV3Schema"
                for where, why in cel_rules.compile_problems(version["schema"].get("openAPIV3Schema"), schema_path):
                    causes.append(invalid_value(where, None, why))
    return causes


def crd_status(crd: JsonObject) -> JsonObject:
    """What the apiextensions controllers would have written by the time a client looks."""
    spec = crd.get("spec", {})
    names = dict(spec.get("names", {}))
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    stored = [version["name"] for version in spec.get("versions", []) if version.get("storage")]
    previous = crd.get("status", {}).get("storedVersions", []) if isinstance(crd.get("status"), dict) else []
    condition = {"status": "True", "lastTransitionTime": crd["metadata"].get("creationTimestamp")}
    return {
        "acceptedNames": names,
        "conditions": [
            {**condition, "type": "NamesAccepted", "reason": "NoConflicts", "message": "no conflicts found"},
            {
                **condition,
                "type": "Established",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
        "storedVersions": list(dict.fromkeys([*previous, *stored])),
    }


def resource_types_from_crd(crd: JsonObject) -> list[ResourceType]:
    """One :class:`ResourceType` per served version."""
    spec = crd["spec"]
    names = spec["names"]
    types = []
    for version in spec.get("versions", []):
        if not version.get("served", True):
            continue
        subresources: dict[str, Any] = version.get("subresources") or {}
        scale_spec = subresources.get("scale")
        scale = None
        if isinstance(scale_spec, dict):
            selector_path = scale_spec.get("labelSelectorPath")
            scale = ScaleSubresource(
                spec_replicas_path=parse_dotted_path(scale_spec.get("specReplicasPath", ".spec.replicas")),
                status_replicas_path=parse_dotted_path(scale_spec.get("statusReplicasPath", ".status.replicas")),
                label_selector_path=parse_dotted_path(selector_path) if selector_path else None,
            )
        types.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                plural=names["plural"],
                singular=names.get("singular") or str(names["kind"]).lower(),
                kind=names["kind"],
                namespaced=spec.get("scope") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                has_status="status" in subresources,
                scale=scale,
                builtin=False,
                allow_unconditional_update=False,
                delete_returns_object=True,
                selectable_fields=frozenset(
                    str(field["jsonPath"]).lstrip(".") for field in version.get("selectableFields") or []
                ),
                name_rule="path-segment",
                printer_columns=_printer_columns(version),
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
            )
        )
    return types


_DEFAULT_COLUMNS = (PrinterColumn("Age", "date", ".metadata.creationTimestamp"),)


def _printer_columns(version: JsonObject) -> tuple[PrinterColumn, ...]:
    """The version's ``additionalPrinterColumns``; Age alone when it declares none (as the server does)."""
    declared = version.get("additionalPrinterColumns")
    if not declared:
        return _DEFAULT_COLUMNS
    return tuple(
        PrinterColumn(
            name=str(column.get("name", "")),
            type=str(column.get("type", "string")),
            json_path=str(column.get("jsonPath", "")),
            format=str(column.get("format", "")),
            description=str(column.get("description", "")),
            priority=int(column.get("priority", 0)),
        )
        for column in declared
        if isinstance(column, dict)
    )


class CrdRegistrar:
    """Keeps the registry in step with stored CRDs, whatever wrote them (HTTP, seeding, tests)."""

    def __init__(self, registry: ResourceRegistry, store: ObjectStore) -> None:
        self._registry = registry
        self._store = store
        store.add_listener(CRD_STORAGE_KEY, self._on_change)

    def _on_change(self, _storage_key: str, event: WatchEvent) -> None:
        crd = event.current.obj
        spec = crd.get("spec", {})
        group, plural = spec.get("group", ""), spec.get("names", {}).get("plural", "")
        self._registry.remove_group_resource(group, plural)
        if event.type == "DELETED":
            self._store.drop(f"{group}/{plural}", reason=f"CustomResourceDefinition {crd['metadata']['name']} deleted")
            return
        for resource_type in resource_types_from_crd(crd):
            self._registry.add(resource_type)
