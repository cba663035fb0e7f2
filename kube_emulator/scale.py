"""The ``scale`` subresource: an ``autoscaling/v1`` ``Scale`` view of a workload or custom resource.

Like the real server, ``spec.replicas`` is omitted when it is 0 (``omitempty``), so a client
reads ``None`` there; ``status.selector`` is the parent's label selector as a *string*
(built from ``spec.selector`` for built-in workloads, read from ``labelSelectorPath`` for
custom resources) and is omitted when there is none.
"""

from __future__ import annotations

from typing import Any

from kube_emulator.jsonutil import JsonObject, get_path, set_path
from kube_emulator.resources import ScaleSubresource
from kube_emulator.selectors import selector_from_label_selector


def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


def selector_string(subresource: ScaleSubresource, obj: JsonObject) -> str | None:
    if subresource.selector_from_spec_selector:
        try:
            selector = selector_from_label_selector(get_path(obj, ("spec", "selector")))
        except ValueError:
            return None
        return str(selector) if selector is not None else None
    if subresource.label_selector_path is not None:
        value = get_path(obj, subresource.label_selector_path)
        return value if isinstance(value, str) else None
    return None


def scale_of(subresource: ScaleSubresource, obj: JsonObject) -> JsonObject:
    meta = obj["metadata"]
    scale_meta = {
        key: meta[key]
        for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if meta.get(key) is not None
    }
    spec_replicas = _as_int(get_path(obj, subresource.spec_replicas_path))
    status: JsonObject = {"replicas": _as_int(get_path(obj, subresource.status_replicas_path))}
    selector = selector_string(subresource, obj)
    if selector:
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": spec_replicas} if spec_replicas else {},
        "status": status,
    }


def with_replicas(subresource: ScaleSubresource, obj: JsonObject, replicas: int) -> None:
    """Write ``replicas`` into a private copy of the parent object."""
    set_path(obj, subresource.spec_replicas_path, replicas)
