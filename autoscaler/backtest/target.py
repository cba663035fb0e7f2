"""TARGET.yaml: a bare target spec, or a whole ScalingTarget object (the service's custom resource).

The object's ``metadata.namespace`` and ``metadata.name`` are the values the query templates'
``<<namespace>>``/``<<scope>>`` and ``<<name>>`` take, as in the service; a bare spec gets them
from the command line (namespace ``default``, name the scale target's name, unless given).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autoscaler.core.spec import TargetSpec
from autoscaler.core.spec_parse import read_target_spec
from autoscaler.values.fields import ErrorList, FieldError, Obj, SpecError
from autoscaler.values.yaml_files import load_yaml_file

API_VERSION = "autoscaler.dev/v1alpha1"
KIND = "ScalingTarget"
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class BacktestTarget:
    namespace: str
    name: str
    spec: TargetSpec
    source: str  # the file it came from, to label reports and plots


def load_target(path: str, *, namespace: str | None = None, name: str | None = None) -> BacktestTarget:
    """Read and validate ``path``; raise :class:`SpecError` listing every problem (paths as in the file)."""
    document = load_yaml_file(path)
    if not isinstance(document, Mapping):
        raise SpecError([FieldError(path, "must be a target spec or a ScalingTarget object (a YAML mapping)")])
    errors = ErrorList()
    if "spec" in document and "scaleTargetRef" not in document:
        target = _object(document, errors, namespace, name, path)
    else:
        spec = read_target_spec(document, "spec", errors, require_queries=True)
        target = None
        if spec is not None:
            target = BacktestTarget(namespace or DEFAULT_NAMESPACE, name or spec.scale_target_ref.name, spec, path)
    errors.raise_if_any()
    assert target is not None
    return target


def _object(
    document: Mapping[str, object], errors: ErrorList, namespace: str | None, name: str | None, path: str
) -> BacktestTarget | None:
    root = Obj(document, "", errors)
    root.string("apiVersion", required=True, choices=(API_VERSION,))
    root.string("kind", required=True, choices=(KIND,))
    metadata = root.obj("metadata", required=True)
    object_name = object_namespace = None
    if metadata is not None:
        object_name = metadata.string("name", required=True, non_empty=True)
        object_namespace = metadata.string("namespace", non_empty=True)
        metadata.mark_known(*metadata.value.keys())  # labels, annotations, uid…: not ours to check
    spec = read_target_spec(root.raw("spec", required=True), "spec", errors, require_queries=True)
    root.mark_known("status")
    root.finish()
    if spec is None or errors:
        return None
    return BacktestTarget(namespace or object_namespace or DEFAULT_NAMESPACE, name or object_name or "", spec, path)
