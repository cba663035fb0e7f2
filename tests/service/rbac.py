"""Kubernetes RBAC evaluated in the test, as the API server's RBAC authorizer does it.

A request is an :class:`Access` (verb, API group, resource with its subresource, namespace, name; or a
non-resource path). :class:`Authorizer` collects the rules a service account gets from the bindings in a
set of manifests — a ClusterRoleBinding grants its role everywhere, a RoleBinding only in its own
namespace — and answers which rule allows a request (``rbac/v1`` ``RuleAllows``: verbs, apiGroups,
resources as ``resource`` or ``resource/subresource``, resourceNames; ``*`` wildcards honoured).

Non-resource requests are allowed by the built-in ``system:discovery`` ClusterRole, which Kubernetes binds
to every authenticated user: the paths below are its exact rules.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kube_emulator.requestinfo import RequestInfo

SYSTEM_DISCOVERY_PATHS = (
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
)


@dataclass(frozen=True, slots=True)
class Access:
    verb: str
    group: str = ""
    resource: str = ""  # "deployments" or "deployments/scale"
    namespace: str | None = None  # None: cluster-wide (a list or watch across all namespaces)
    name: str | None = None
    path: str | None = None  # set for non-resource requests

    @classmethod
    def of(cls, info: RequestInfo) -> Access:
        if not info.is_resource_request:
            return cls(verb=info.verb, path=info.path)
        return cls(info.verb, info.group, info.resource_label, info.namespace, info.name)

    def __str__(self) -> str:
        if self.path is not None:
            return f"{self.verb} {self.path}"
        where = f" in {self.namespace}" if self.namespace else " (all namespaces)"
        group = self.group or "core"
        return f"{self.verb} {group}/{self.resource}{'/' + self.name if self.name else ''}{where}"


@dataclass(frozen=True, slots=True)
class Grant:
    """One (apiGroup, resource, verb[, resourceName]) of one rule, where it applies, and where it came from."""

    group: str
    resource: str
    verb: str
    resource_names: tuple[str, ...]
    namespace: str | None  # None: every namespace and cluster-wide requests (a ClusterRoleBinding)
    rule: str  # "ClusterRole/autoscaler rules[2]"
    binding: str  # "ClusterRoleBinding/autoscaler"

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The grant as written in its role, whichever binding (and namespace) it comes through."""
        return self.rule, self.group, self.resource, self.verb

    def allows(self, access: Access) -> bool:
        if access.path is not None:
            return False
        if self.namespace is not None and access.namespace != self.namespace:
            return False
        if self.verb not in ("*", access.verb) or self.group not in ("*", access.group):
            return False
        if not _resource_matches(self.resource, access.resource):
            return False
        return not self.resource_names or (access.name is not None and access.name in self.resource_names)

    def __str__(self) -> str:
        names = f" {list(self.resource_names)}" if self.resource_names else ""
        where = f" in {self.namespace}" if self.namespace else " cluster-wide"
        return f"{self.verb} {self.group or 'core'}/{self.resource}{names}{where} ({self.rule} via {self.binding})"


def _resource_matches(rule: str, requested: str) -> bool:
    """``RuleAllows``: ``*`` matches everything, ``*/scale`` any resource's scale, else exact."""
    if rule in ("*", requested):
        return True
    subresource = requested.partition("/")[2]
    return bool(subresource) and rule == f"*/{subresource}"


class Authorizer:
    def __init__(self, documents: Iterable[Mapping[str, Any]], *, namespace: str, service_account: str) -> None:
        docs = list(documents)
        self.subject = (namespace, service_account)
        cluster_roles = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "ClusterRole"}
        roles = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in docs if d.get("kind") == "Role"}
        self.grants: list[Grant] = []
        self.bound_roles: list[Mapping[str, Any]] = []
        for binding in docs:
            if binding.get("kind") not in ("ClusterRoleBinding", "RoleBinding") or not self._binds_us(binding):
                continue
            ref = binding["roleRef"]
            binding_ns = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
            if ref["kind"] == "ClusterRole":
                role = cluster_roles.get(ref["name"])
            else:
                role = roles.get((binding_ns, ref["name"]))
            assert role is not None, f"{binding['kind']}/{binding['metadata']['name']} refers to a missing role"
            self.bound_roles.append(role)
            via = f"{binding['kind']}/{binding['metadata']['name']}"
            for index, rule in enumerate(role.get("rules") or []):
                where = f"{role['kind']}/{role['metadata']['name']} rules[{index}]"
                for group in rule.get("apiGroups") or []:
                    for resource in rule.get("resources") or []:
                        for verb in rule.get("verbs") or []:
                            self.grants.append(
                                Grant(
                                    group,
                                    resource,
                                    verb,
                                    tuple(rule.get("resourceNames") or ()),
                                    binding_ns,
                                    where,
                                    via,
                                )
                            )

    def _binds_us(self, binding: Mapping[str, Any]) -> bool:
        return any(
            s.get("kind") == "ServiceAccount" and (s.get("namespace"), s.get("name")) == self.subject
            for s in binding.get("subjects") or []
        )

    def allowed_by(self, access: Access) -> list[Grant] | None:
        """The grants that allow ``access``; ``[]`` for discovery (system:discovery); None when denied."""
        if access.path is not None:
            discovery = access.verb == "get" and any(
                fnmatch.fnmatchcase(access.path, p) for p in SYSTEM_DISCOVERY_PATHS
            )
            return [] if discovery else None
        matching = [g for g in self.grants if g.allows(access)]
        return matching or None
