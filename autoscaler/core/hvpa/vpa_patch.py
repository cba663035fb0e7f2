"""The VPA pin: a JSON merge patch setting minAllowed = maxAllowed = the decided per-pod request (A21).

Custom resources take no strategic merge patch, and a JSON merge patch replaces lists whole, so the
patch carries the *entire* ``spec.resourcePolicy.containerPolicies`` list: every entry as read from
the VPA (fields this autoscaler does not know are kept), with the pinned resources set on the
controlled containers' entries, and an entry added for a controlled container that has none. An
added entry repeats the user's policy for that container (mode, controlledResources,
controlledValues and the bounds of resources that are not pinned), because the VPA's ``*`` entry
stops applying to a container once it has its own. When the VPA's list was not read (the
simulator), the user's ``hvpa.containers`` stand in for it. With ``resourceVersion`` known, the
patch carries it, so that a concurrent change makes the write fail (409) instead of being lost.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from autoscaler.core.hvpa.spec import MEMORY, ContainerPolicy, HvpaSpec
from autoscaler.values.quantity import Format, format_quantity

Pins = Mapping[str, Mapping[str, Fraction]]  # container → resource → per-pod value
BOUNDS = ("minAllowed", "maxAllowed")


def quantity_text(resource: str, value: Fraction) -> str:
    """How a pinned amount is written: CPU as cores or millicores, memory in bytes or an exact binary unit."""
    return format_quantity(value, Format.BINARY_SI if resource == MEMORY else Format.DECIMAL_SI)


def policy_entry(policy: ContainerPolicy, container: str) -> dict[str, Any]:
    """The user's policy as a VPA containerPolicies entry for ``container``, with the fields they wrote."""
    entry: dict[str, Any] = {"containerName": container}
    if "mode" in policy.explicit:
        entry["mode"] = policy.mode.value
    if "controlledResources" in policy.explicit:
        entry["controlledResources"] = list(policy.controlled_resources)
    if "controlledValues" in policy.explicit:
        entry["controlledValues"] = policy.controlled_values.value
    for key, amounts in (("minAllowed", policy.min_allowed), ("maxAllowed", policy.max_allowed)):
        if key in policy.explicit:
            entry[key] = {resource: str(quantity) for resource, quantity in amounts.items()}
    return entry


def user_policies(spec: HvpaSpec) -> list[dict[str, Any]]:
    return [policy_entry(policy, policy.name) for policy in spec.containers]


def pinned_policies(spec: HvpaSpec, pins: Pins, policies: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """The whole containerPolicies list with ``pins`` applied."""
    result = copy.deepcopy([dict(p) for p in policies]) if policies is not None else user_policies(spec)
    for container, amounts in pins.items():
        if not amounts:
            continue
        entry = next((e for e in result if e.get("containerName") == container), None)
        if entry is None:
            entry = policy_entry(spec.policy_for(container), container)
            result.append(entry)
        for bound in BOUNDS:
            current = entry.get(bound)
            updated = dict(current) if isinstance(current, Mapping) else {}
            for resource, value in amounts.items():
                updated[resource] = quantity_text(resource, value)
            entry[bound] = updated
    return result


def merge_patch(
    spec: HvpaSpec, pins: Pins, policies: Sequence[Mapping[str, Any]] | None, resource_version: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"spec": {"resourcePolicy": {"containerPolicies": pinned_policies(spec, pins, policies)}}}
    if resource_version is not None:
        body = {"metadata": {"resourceVersion": resource_version}, **body}
    return body
