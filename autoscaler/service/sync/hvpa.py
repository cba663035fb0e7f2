"""The HVPA side of a sync in the service: finding and reading the target's VPA, persisting HVPA's
state, and the status section that shows the per-pod sizing.

The decision itself is :func:`autoscaler.core.hvpa.decision.decide_hvpa`; see docs/hvpa.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from autoscaler.core.hvpa.decision import HvpaDecision, HvpaState, VpaObservation
from autoscaler.core.hvpa.explain import explain_hvpa, hvpa_json
from autoscaler.core.hvpa.recommendation_window import Recommendation
from autoscaler.core.hvpa.vpa import read_vpa_status
from autoscaler.core.hvpa.vpa_patch import quantity_text
from autoscaler.core.spec import TargetSpec
from autoscaler.values.fields import ErrorList
from autoscaler.values.quantity import Quantity, QuantityError
from autoscaler.values.timestamps import parse_rfc3339, rfc3339


def find_vpa(vpas: Iterable[Mapping[str, Any]], namespace: str, spec: TargetSpec) -> Mapping[str, Any] | None:
    """The VPA named in ``hvpa.vpa``, else the one in the namespace whose targetRef is the scale target."""
    assert spec.hvpa is not None
    ref = spec.scale_target_ref
    for vpa in vpas:
        meta = _mapping(vpa.get("metadata"))
        if meta.get("namespace") != namespace:
            continue
        if spec.hvpa.vpa is not None:
            if meta.get("name") == spec.hvpa.vpa:
                return vpa
            continue
        target_ref = _mapping(_mapping(vpa.get("spec")).get("targetRef"))
        if target_ref.get("kind") == ref.kind and target_ref.get("name") == ref.name:
            return vpa
    return None


def vpa_observation(vpa: Mapping[str, Any] | None) -> VpaObservation | None:
    """The VPA as the HVPA engine reads it; a malformed status reads as no recommendation."""
    if vpa is None:
        return None
    status = read_vpa_status(vpa.get("status") or {}, "status", ErrorList(), strict=False)
    policies = _mapping(_mapping(vpa.get("spec")).get("resourcePolicy")).get("containerPolicies")
    meta = _mapping(vpa.get("metadata"))
    return VpaObservation(
        status,
        tuple(p for p in policies if isinstance(p, Mapping)) if isinstance(policies, list) else (),
        str(meta.get("resourceVersion") or "") or None,
    )


def _mapping(value: object) -> Mapping[str, Any]:
    """A part of a VPA that should be an object; an empty one when it is not (its CRD may not say)."""
    return value if isinstance(value, Mapping) else {}


def hvpa_state_document(state: HvpaState) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "pins": {c: {r: quantity_text(r, v) for r, v in amounts.items()} for c, amounts in state.pins.items()}
    }
    if state.last_applied is not None:
        doc["lastApplied"] = rfc3339(state.last_applied, fraction=True)
    if state.history:  # stabilizationMode WindowMax: the proposals still inside the window
        doc["recommendations"] = [
            {
                "time": rfc3339(s.at, fraction=True),
                "container": s.container,
                "resource": s.resource,
                "replicas": s.replicas,
                "request": quantity_text(s.resource, s.request),
            }
            for s in state.history
        ]
    return doc


def restore_hvpa_state(document: object) -> HvpaState:
    if not isinstance(document, Mapping):
        return HvpaState()
    pins: dict[str, dict[str, Fraction]] = {}
    pinned = document.get("pins")
    for container, amounts in pinned.items() if isinstance(pinned, Mapping) else ():
        if not isinstance(amounts, Mapping):
            continue
        for resource, text in amounts.items():
            try:
                pins.setdefault(str(container), {})[str(resource)] = Quantity.parse(str(text)).value
            except QuantityError:
                continue
    return HvpaState(
        last_applied=parse_rfc3339(document.get("lastApplied")),
        pins=pins,
        history=_restore_recommendations(document.get("recommendations")),
    )


def _restore_recommendations(entries: object) -> tuple[Recommendation, ...]:
    """The WindowMax history from status; an entry that does not read (edited by hand) is left out."""
    history: list[Recommendation] = []
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, Mapping):
            continue
        at = parse_rfc3339(entry.get("time"))
        container, resource, replicas = entry.get("container"), entry.get("resource"), entry.get("replicas")
        if at is None or not isinstance(container, str) or not isinstance(resource, str):
            continue
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
            continue
        try:
            request = Quantity.parse(str(entry.get("request"))).value
        except QuantityError:
            continue
        history.append(Recommendation(at, container, resource, replicas, request))
    return tuple(history)


def hvpa_status(decision: HvpaDecision, state: HvpaState) -> dict[str, Any]:
    """The ``status.hvpa`` section: what HVPA decided (as ``simulate --output json`` shows it), its
    explanation, and the state the next sync starts from."""
    summary = hvpa_json(decision)
    summary.pop("vpaPatch", None)  # the patch is applied, not stored
    return {
        **summary,
        "inactive": decision.inactive,
        "blockDetail": decision.block_detail or None,
        "explanation": explain_hvpa(decision),
        "state": hvpa_state_document(state),
    }
