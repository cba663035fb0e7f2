"""What the emulator serves: resource types and the registry that discovery and routing read.

A :class:`ResourceType` is one (group, version, plural) endpoint. Several versions of one
custom resource share a storage key (group + plural) and hence one set of objects, as they do
in a real cluster where conversion between versions is the "None" strategy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from kube_emulator.jsonutil import JsonObject

STANDARD_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
SUBRESOURCE_VERBS: tuple[str, ...] = ("get", "patch", "update")

NameRule = Literal["subdomain", "label", "path-segment"]


@dataclass(frozen=True, slots=True)
class ScaleSubresource:
    """Where the ``scale`` subresource reads and writes replicas.

    Built-in workloads build ``status.selector`` from their ``spec.selector`` LabelSelector;
    custom resources name a path holding the selector *string* (``labelSelectorPath``).
    """

    spec_replicas_path: tuple[str, ...] = ("spec", "replicas")
    status_replicas_path: tuple[str, ...] = ("status", "replicas")
    label_selector_path: tuple[str, ...] | None = None
    selector_from_spec_selector: bool = False


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """One of a CRD version's ``additionalPrinterColumns``: a Table column read at a JSONPath."""

    name: str
    type: str
    json_path: str
    format: str = ""
    description: str = ""
    priority: int = 0


@dataclass(frozen=True, slots=True)
class Converter:
    """Translates between the stored representation and the one an endpoint serves."""

    to_storage: Callable[[JsonObject], JsonObject]
    from_storage: Callable[[JsonObject], JsonObject]


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = False
    scale: ScaleSubresource | None = None
    builtin: bool = True
    """Built-in kinds accept strategic-merge patches; custom resources answer 415."""
    has_generation: bool = True
    generation_tracks_annotations: bool = False
    """Deployments bump ``generation`` on annotation changes too (annotations are copied to ReplicaSets)."""
    allow_unconditional_update: bool = True
    """Whether PUT without ``metadata.resourceVersion`` is allowed (custom resources say no)."""
    delete_returns_object: bool = False
    """DELETE answers with the object (pods, custom resources) or with a ``Status`` (most built-ins)."""
    selectable_fields: frozenset[str] = frozenset()
    """Field-selector fields beyond ``metadata.name`` and ``metadata.namespace``."""
    name_rule: NameRule = "subdomain"
    storage: str = ""
    """Storage key shared by every endpoint that serves the same objects; defaults to group/plural."""
    converter: Converter | None = field(default=None, compare=False)
    printer_columns: tuple[PrinterColumn, ...] = ()
    """A custom resource's Table columns after Name (its CRD's ``additionalPrinterColumns``)."""
    schema: JsonObject | None = field(default=None, compare=False)
    """A custom resource version's ``openAPIV3Schema`` (enforced on writes, served as OpenAPI)."""
    verbs: tuple[str, ...] = STANDARD_VERBS
    """``("create",)`` for a review: answered at once, never stored (SelfSubjectAccessReview)."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_key(self) -> str:
        return self.storage or f"{self.group}/{self.plural}"

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def subresources(self) -> tuple[str, ...]:
        names: list[str] = []
        if self.has_status:
            names.append("status")
        if self.scale is not None:
            names.append("scale")
        return tuple(names)


class ResourceRegistry:
    """Every served endpoint, with the look-ups routing, discovery and the in-process API need."""

    def __init__(self, types: Iterable[ResourceType] = ()) -> None:
        self._by_endpoint: dict[tuple[str, str, str], ResourceType] = {}
        for resource_type in types:
            self.add(resource_type)

    def add(self, resource_type: ResourceType) -> None:
        self._by_endpoint[(resource_type.group, resource_type.version, resource_type.plural)] = resource_type

    def remove_group_resource(self, group: str, plural: str) -> list[ResourceType]:
        removed = [rt for key, rt in self._by_endpoint.items() if key[0] == group and key[2] == plural]
        for resource_type in removed:
            del self._by_endpoint[(resource_type.group, resource_type.version, resource_type.plural)]
        return removed

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_endpoint.get((group, version, plural))

    def versions_of(self, group: str, plural: str) -> list[ResourceType]:
        return [rt for (g, _, p), rt in self._by_endpoint.items() if g == group and p == plural]

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._by_endpoint.values()))

    def group_versions(self) -> dict[str, list[str]]:
        """``{group: [versions, preferred first]}`` in registration order (core group is ``""``)."""
        versions: dict[str, list[str]] = {}
        for group, version, _ in self._by_endpoint:
            listed = versions.setdefault(group, [])
            if version not in listed:
                listed.append(version)
        return {group: sorted(found, key=version_priority) for group, found in versions.items()}

    def resources_in(self, group: str, version: str) -> list[ResourceType]:
        return [rt for (g, v, _), rt in self._by_endpoint.items() if g == group and v == version]

    def for_object(self, api_version: str, kind: str) -> ResourceType:
        """The endpoint that serves objects of this apiVersion and kind."""
        group, _, version = api_version.rpartition("/")
        for (g, v, _), resource_type in self._by_endpoint.items():
            if g == group and v == version and resource_type.kind == kind:
                return resource_type
        raise KeyError(f"no resource serves {api_version} {kind}")

    def resolve(self, name: str) -> ResourceType:
        """Find a type the way ``kubectl`` does: ``deployments``, ``deployments.apps``, ``deploy``,
        ``Deployment``, ``apps/v1/deployments`` or ``v1/pods``. The preferred version wins."""
        candidates = self._resolve_candidates(name)
        if not candidates:
            raise KeyError(f"unknown resource {name!r}")
        return sorted(candidates, key=lambda rt: version_priority(rt.version))[0]

    def _resolve_candidates(self, name: str) -> list[ResourceType]:
        if "/" in name:
            *group_parts, version, plural = name.split("/")
            group = "/".join(group_parts)
            found = self.lookup(group, version, plural)
            return [found] if found else []
        plural_or_kind, _, group = name.partition(".")
        matches = []
        for rt in self._by_endpoint.values():
            if group and rt.group != group:
                continue
            lowered = plural_or_kind.lower()
            if lowered in (rt.plural, rt.singular, rt.kind.lower()) or lowered in rt.short_names:
                matches.append(rt)
        if not group:
            # An unqualified name prefers the core group, then built-in groups (as kubectl does).
            core = [rt for rt in matches if rt.group == ""]
            if core:
                return core
            builtin = [rt for rt in matches if rt.builtin]
            if builtin:
                return builtin
        return matches


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version ordering (GA > beta > alpha, higher numbers first) as a sort key."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (3, 0, 0, version)
    major = int(match.group(1))
    stage = {"alpha": 2, "beta": 1, None: 0}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor, version)
