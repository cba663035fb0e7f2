"""The ScalingTarget object a conversion ends with, checked by this project's own spec parser."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.convert.model import Conversion
from autoscaler.core.other_autoscalers import TAKE_OVER_ANNOTATION
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.values.fields import ErrorList, SpecError

API_VERSION = "autoscaler.dev/v1alpha1"
KIND = "ScalingTarget"
DEFAULT_NAMESPACE = "default"


def metadata_of(document: Mapping[str, Any], errors: ErrorList) -> tuple[str, str]:
    """``(namespace, name)`` of a Kubernetes object (namespace ``default`` when absent, as kubectl
    applies it); a missing name is an error."""
    metadata = document.get("metadata")
    if not isinstance(metadata, Mapping):
        errors.add("metadata", "Required value")
        return DEFAULT_NAMESPACE, ""
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        errors.add("metadata.name", "Required value")
        name = ""
    namespace = metadata.get("namespace")
    return (namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE), name


def finish_target(conversion: Conversion, spec: dict[str, Any], annotations: Mapping[str, str] | None = None) -> None:
    """Wrap ``spec`` in a ScalingTarget (with ``annotations`` besides the take-over one) and check it as
    ``autoscaler run`` will: a converted target that this project would refuse is an error of the
    conversion, never output."""
    try:
        parse_target_spec(spec, "spec", require_queries=True)
    except SpecError as exc:
        conversion.errors.extend(f"converted {e}" for e in exc.errors)
        return
    origin = conversion.origin
    conversion.target = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        # The cut-over agreed in advance: applied beside the HPA or ScaledObject it comes from, the target is a
        # shadow, and takes over as soon as that object is deleted (docs/migrating.md).
        "metadata": {
            "name": origin.name,
            "namespace": origin.namespace,
            "annotations": {TAKE_OVER_ANNOTATION: "true", **(annotations or {})},
        },
        "spec": spec,
    }
