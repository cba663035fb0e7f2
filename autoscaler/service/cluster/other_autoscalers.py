"""The other autoscalers' objects as the watch caches keep them (issue 43, never two writers): autoscaling/v2
HorizontalPodAutoscalers and, when KEDA's CRD is installed, ScaledObjects, each trimmed to the workload it
scales (:class:`~autoscaler.core.other_autoscalers.OtherAutoscaler`). The matching rule is the core's.

An HPA that KEDA created for a ScaledObject is attributed to it: the ScaledObject is what a person
deletes at the cut-over, and it is what the condition names. KEDA marks its HPAs with an ownerReference
to the ScaledObject and with the label ``scaledobject.keda.sh/name``; either is enough.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.core.other_autoscalers import OtherAutoscaler, api_group
from autoscaler.values.loose_json import as_mapping, mappings_in

KEDA_GROUP = "keda.sh"
KEDA_NAME_LABEL = "scaledobject.keda.sh/name"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _keda_owner(meta: Mapping[str, Any]) -> str:
    """The ScaledObject that created this HPA (its name), or ""."""
    for ref in mappings_in(meta.get("ownerReferences")):
        if ref.get("kind") == "ScaledObject" and api_group(_text(ref.get("apiVersion"))) == KEDA_GROUP:
            return _text(ref.get("name"))
    return _text(as_mapping(meta.get("labels")).get(KEDA_NAME_LABEL))


def _trim(obj: Mapping[str, Any], kind: str, default_api_version: str) -> OtherAutoscaler | None:
    meta = as_mapping(obj.get("metadata"))
    name, namespace = _text(meta.get("name")), _text(meta.get("namespace"))
    ref = as_mapping(as_mapping(obj.get("spec")).get("scaleTargetRef"))
    target_name = _text(ref.get("name"))
    if not name or not target_name:
        return None
    owner = ""
    if kind == "HorizontalPodAutoscaler":
        keda = _keda_owner(meta)
        owner = f"ScaledObject {namespace}/{keda}" if keda else ""
    return OtherAutoscaler(
        kind,
        namespace,
        name,
        api_group(_text(ref.get("apiVersion")) or default_api_version),
        _text(ref.get("kind")) or "Deployment",
        target_name,
        owner,
    )


def trim_hpa(obj: Mapping[str, Any]) -> OtherAutoscaler | None:
    """An autoscaling/v2 HPA: its scaleTargetRef (apiVersion, kind and name are required there)."""
    return _trim(obj, "HorizontalPodAutoscaler", "")


def trim_scaled_object(obj: Mapping[str, Any]) -> OtherAutoscaler | None:
    """A KEDA ScaledObject: its scaleTargetRef's apiVersion defaults to apps/v1 and its kind to Deployment."""
    return _trim(obj, "ScaledObject", "apps/v1")


class AutoscalerIndex:
    """The HPAs and ScaledObjects by the workload they scale (namespace, name), kept by the caches' change
    handler: a sync looks its workload up instead of walking every HPA of its scope (10,000 targets against
    a cluster's HPAs made that a product each period)."""

    def __init__(self) -> None:
        self._by_workload: dict[tuple[str, str], dict[tuple[str, str], OtherAutoscaler]] = {}

    def on_change(self, key: tuple[str, str], old: OtherAutoscaler | None, new: OtherAutoscaler | None) -> None:
        if old is not None:
            workload = (old.namespace, old.target_name)
            bucket = self._by_workload.get(workload)
            if bucket is not None:
                bucket.pop((old.kind, old.name), None)
                if not bucket:
                    del self._by_workload[workload]
        if new is not None:
            self._by_workload.setdefault((new.namespace, new.target_name), {})[(new.kind, new.name)] = new

    def scaling(self, namespace: str, workload: str) -> list[OtherAutoscaler]:
        """Every HPA and ScaledObject whose scaleTargetRef names ``workload`` (any group and kind)."""
        return list(self._by_workload.get((namespace, workload), {}).values())
