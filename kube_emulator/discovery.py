"""Discovery documents (``/api``, ``/apis``, ``/apis/<g>``, ``/apis/<g>/<v>``, ``/version``),
computed from the registry on each request so CRDs show up as soon as they are created.

Only the legacy (unaggregated) format is served; clients that ask for aggregated discovery
(kubectl does) list ``application/json`` as a fallback and use it.
"""

from __future__ import annotations

from kube_emulator.jsonutil import JsonObject
from kube_emulator.resources import (
    SUBRESOURCE_VERBS,
    ResourceRegistry,
    ResourceType,
)


def version_info(git_version: str) -> JsonObject:
    major, minor = git_version.lstrip("v").split(".")[:2]
    return {
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> JsonObject:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(group: str, versions: list[str]) -> JsonObject:
    entries = [{"groupVersion": f"{group}/{version}", "version": version} for version in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: ResourceRegistry) -> JsonObject:
    groups = [_group_entry(group, versions) for group, versions in registry.group_versions().items() if group]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: ResourceRegistry, group: str) -> JsonObject | None:
    versions = registry.group_versions().get(group)
    if not versions or not group:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def _resource_entries(resource_type: ResourceType) -> list[JsonObject]:
    main: JsonObject = {
        "name": resource_type.plural,
        "singularName": resource_type.singular,
        "namespaced": resource_type.namespaced,
        "kind": resource_type.kind,
        "verbs": list(resource_type.verbs),
    }
    if resource_type.short_names:
        main["shortNames"] = list(resource_type.short_names)
    if resource_type.categories:
        main["categories"] = list(resource_type.categories)
    entries = [main]
    if resource_type.has_status:
        entries.append(
            {
                "name": f"{resource_type.plural}/status",
                "singularName": "",
                "namespaced": resource_type.namespaced,
                "kind": resource_type.kind,
                "verbs": list(SUBRESOURCE_VERBS),
            }
        )
    if resource_type.scale is not None:
        entries.append(
            {
                "name": f"{resource_type.plural}/scale",
                "singularName": "",
                "namespaced": resource_type.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": list(SUBRESOURCE_VERBS),
            }
        )
    return entries


def api_resource_list(registry: ResourceRegistry, group: str, version: str) -> JsonObject | None:
    types = registry.resources_in(group, version)
    if not types:
        return None
    resources = [
        entry for resource_type in sorted(types, key=lambda rt: rt.plural) for entry in _resource_entries(resource_type)
    ]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
