"""The HVPA side of a sync in the service: finding and reading the target's VPA (its CRD may not say
what its parts hold: a part that is not what it should be reads as empty).

The decision itself is :func:`autoscaler.core.hvpa.decision.decide_hvpa`; see docs/hvpa.md. HVPA's status
section, its state included, is :mod:`autoscaler.service.sync.status_sections`'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.core.hvpa.decision import VpaObservation
from autoscaler.core.hvpa.vpa import read_vpa_status
from autoscaler.core.spec import TargetSpec
from autoscaler.values.fields import ErrorList
from autoscaler.values.loose_json import as_mapping, mappings_in


def find_vpa(vpas: Iterable[Mapping[str, Any]], namespace: str, spec: TargetSpec) -> Mapping[str, Any] | None:
    """The VPA named in ``hvpa.vpa``, else the one in the namespace whose targetRef is the scale target."""
    assert spec.hvpa is not None
    ref = spec.scale_target_ref
    for vpa in vpas:
        meta = as_mapping(vpa.get("metadata"))
        if meta.get("namespace") != namespace:
            continue
        if spec.hvpa.vpa is not None:
            if meta.get("name") == spec.hvpa.vpa:
                return vpa
            continue
        target_ref = as_mapping(as_mapping(vpa.get("spec")).get("targetRef"))
        if target_ref.get("kind") == ref.kind and target_ref.get("name") == ref.name:
            return vpa
    return None


def vpa_observation(vpa: Mapping[str, Any] | None) -> VpaObservation | None:
    """The VPA as the HVPA engine reads it; a malformed status reads as no recommendation."""
    if vpa is None:
        return None
    status = read_vpa_status(vpa.get("status") or {}, "status", ErrorList(), strict=False)
    policies = as_mapping(as_mapping(vpa.get("spec")).get("resourcePolicy")).get("containerPolicies")
    meta = as_mapping(vpa.get("metadata"))
    return VpaObservation(
        status,
        tuple(mappings_in(policies)),
        str(meta.get("resourceVersion") or "") or None,
    )
