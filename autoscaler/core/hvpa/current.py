"""What the pods carry now: the current request (and limit) per pod of each container and resource (A21).

The current request, in order of preference:

1. the value this autoscaler last pinned on the VPA, if the VPA still holds that pin
   (minAllowed = maxAllowed = the pinned value) — the VPA's admission controller puts it on new pods;
2. otherwise the largest request among the target's non-terminating pods;
3. otherwise the Deployment template's request;
4. otherwise 0.

The current limit comes from the pods, else the template (none: the container has no limit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from autoscaler.core.observation import ContainerInfo, PodInfo, PodPhase
from autoscaler.values.quantity import Quantity, QuantityError

PIN = "pin"
PODS = "pods"
TEMPLATE = "template"
NONE = "none"


@dataclass(frozen=True, slots=True)
class CurrentResource:
    request: Fraction
    request_from: str  # PIN, PODS, TEMPLATE or NONE
    limit: Fraction | None


def live_containers(pods: Sequence[PodInfo]) -> list[tuple[PodInfo, ContainerInfo]]:
    """The (ordinary, not sidecar) containers of pods that are neither terminating nor finished."""
    return [
        (pod, container)
        for pod in pods
        if not pod.deleting and pod.phase not in (PodPhase.SUCCEEDED, PodPhase.FAILED)
        for container in pod.containers
        if not container.sidecar
    ]


def container_names(pods: Sequence[PodInfo], template: Sequence[ContainerInfo]) -> list[str]:
    """The pods' container names in order of first appearance; the template's when there is no live pod."""
    names = list(dict.fromkeys(container.name for _, container in live_containers(pods)))
    return names or [c.name for c in template if not c.sidecar]


def policy_quantity(
    policies: Sequence[Mapping[str, Any]] | None, container: str, bound: str, resource: str
) -> Fraction | None:
    """``minAllowed``/``maxAllowed`` of ``container`` in the VPA's containerPolicies, if readable."""
    for entry in policies or ():
        if isinstance(entry, Mapping) and entry.get("containerName") == container:
            amounts = entry.get(bound)
            raw = amounts.get(resource) if isinstance(amounts, Mapping) else None
            if raw is None:
                return None
            try:
                return Quantity.parse(raw).value if isinstance(raw, str) else Fraction(raw)
            except (QuantityError, TypeError, ValueError, OverflowError):  # e.g. Fraction(inf)
                return None
    return None


def held_pin(
    policies: Sequence[Mapping[str, Any]] | None, container: str, resource: str, pinned: Fraction | None
) -> bool:
    """Whether the VPA still holds ``pinned`` as both bounds of the container's resource."""
    if pinned is None or policies is None:
        return False
    return (
        policy_quantity(policies, container, "minAllowed", resource) == pinned
        and policy_quantity(policies, container, "maxAllowed", resource) == pinned
    )


def current_resource(
    container: str,
    resource: str,
    pods: Sequence[PodInfo],
    template: Sequence[ContainerInfo],
    policies: Sequence[Mapping[str, Any]] | None,
    pinned: Fraction | None,
) -> CurrentResource:
    live = [c for _, c in live_containers(pods) if c.name == container]
    in_template = [c for c in template if c.name == container]
    limit = _largest(live, "limits", resource)
    if limit is None:
        limit = _largest(in_template, "limits", resource)
    if pinned is not None and held_pin(policies, container, resource, pinned):
        return CurrentResource(pinned, PIN, limit)
    for source, found in ((PODS, live), (TEMPLATE, in_template)):
        request = _largest(found, "requests", resource)
        if request is not None:
            return CurrentResource(request, source, limit)
    return CurrentResource(Fraction(0), NONE, limit)


def _largest(containers: Sequence[ContainerInfo], which: str, resource: str) -> Fraction | None:
    values = []
    for container in containers:
        amounts = container.requests if which == "requests" else container.limits
        milli = amounts.get(resource)
        if milli is not None:
            values.append(Fraction(milli, 1000))
    return max(values) if values else None
