"""Reading ``hvpa.containers``: the per-container policies (EP-0001's container resource policies).

Each policy names a container (or ``"*"`` for every other one) and says whether HVPA resizes it
(``mode``), which resources (``controlledResources``), whether limits follow requests
(``controlledValues``) and the bounds of its requests (``minAllowed``, ``maxAllowed``). Every problem is
added with its path.

Apart from :mod:`autoscaler.core.hvpa.spec_parse` (the section as a whole and the rules that span it and
the target) because a container policy is read on its own; the ResourceList reader is here because
policies are its main user (a scaling interval's ``maxResources`` is the other).
"""

from __future__ import annotations

import re

from autoscaler.core.hvpa.spec import RESOURCES, WILDCARD_CONTAINER, ContainerMode, ContainerPolicy, ControlledValues
from autoscaler.values.fields import Obj, did_you_mean
from autoscaler.values.quantity import Quantity

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def read_resource_list(obj: Obj | None) -> dict[str, Quantity] | None:
    """A ResourceList restricted to cpu and memory (the resources a VPA recommends); ``{}`` when absent,
    None when invalid."""
    if obj is None:
        return {}
    errors_before = len(obj.errors.items)
    result: dict[str, Quantity] = {}
    for resource in RESOURCES:
        quantity = obj.quantity(resource, positive=True)
        if quantity is not None:
            result[resource] = quantity
    obj.finish()
    return result if len(obj.errors.items) == errors_before else None


def read_containers(obj: Obj) -> tuple[ContainerPolicy, ...] | None:
    """The section's ``containers`` (none: ``()``); None when any policy is invalid or a name repeats."""
    result: list[ContainerPolicy] = []
    seen: set[str] = set()
    ok = True
    for path, element in obj.items("containers"):
        policy = _container(Obj.of(element, path, obj.errors))
        if policy is None:
            ok = False
            continue
        if policy.name in seen:
            obj.errors.add(f"{path}.name", f'Duplicate value: "{policy.name}"')
            ok = False
        seen.add(policy.name)
        result.append(policy)
    raw = obj.value.get("containers")
    if raw is not None and not isinstance(raw, list):
        return None
    return tuple(result) if ok else None


def _container(obj: Obj | None) -> ContainerPolicy | None:
    if obj is None:
        return None
    errors_before = len(obj.errors.items)
    name = obj.string("name", required=True, non_empty=True)
    if name and name != WILDCARD_CONTAINER and not _DNS1123_LABEL.match(name):
        obj.error("name", 'must be a container name (a DNS-1123 label) or "*" for every other container')
    mode = obj.string("mode", default=ContainerMode.AUTO.value, choices=[m.value for m in ContainerMode])
    controlled = _controlled_resources(obj)
    values = obj.string(
        "controlledValues",
        default=ControlledValues.REQUESTS_AND_LIMITS.value,
        choices=[v.value for v in ControlledValues],
    )
    min_allowed = read_resource_list(obj.obj("minAllowed"))
    max_allowed = read_resource_list(obj.obj("maxAllowed"))
    if min_allowed and max_allowed:
        for resource in RESOURCES:
            low, high = min_allowed.get(resource), max_allowed.get(resource)
            if low is not None and high is not None and low.value > high.value:
                obj.error(f"minAllowed.{resource}", f"must not be greater than maxAllowed.{resource} ({high})")
    explicit = frozenset(
        key for key in ("mode", "controlledResources", "controlledValues", "minAllowed", "maxAllowed") if obj.has(key)
    )
    obj.finish()
    if len(obj.errors.items) > errors_before:
        return None
    assert name is not None and mode is not None and controlled is not None and values is not None
    assert min_allowed is not None and max_allowed is not None
    return ContainerPolicy(
        name=name,
        mode=ContainerMode(mode),
        controlled_resources=controlled,
        controlled_values=ControlledValues(values),
        min_allowed=min_allowed,
        max_allowed=max_allowed,
        explicit=explicit,
    )


def _controlled_resources(obj: Obj) -> tuple[str, ...] | None:
    if not obj.has("controlledResources"):
        obj.mark_known("controlledResources")
        return RESOURCES
    result: list[str] = []
    for path, element in obj.items("controlledResources"):
        if element not in RESOURCES:
            hint = did_you_mean(str(element), RESOURCES) if isinstance(element, str) else None
            suffix = f' (did you mean "{hint}"?)' if hint else ""
            shown = f'"{element}"' if isinstance(element, str) else repr(element)
            obj.errors.add(path, f'Unsupported value: {shown}: supported values: "cpu", "memory"{suffix}')
            return None
        if element in result:
            obj.errors.add(path, f'Duplicate value: "{element}"')
            return None
        result.append(element)
    return (
        tuple(r for r in RESOURCES if r in result) if isinstance(obj.value.get("controlledResources"), list) else None
    )
