"""Per-kind create/update rules: defaulting, status handling, generation, validation.

These mirror the real registry strategies (``pkg/registry/*/strategy.go`` and the
apiextensions custom-resource strategy) for the behaviour clients can observe:

* on create, a kind with a status subresource starts with a fresh status (a Pod is
  ``Pending``, a Deployment's status is empty, a custom resource has none);
* writes to the main resource keep the stored status; writes to ``/status`` change only status;
* ``metadata.generation`` starts at 1 and is bumped when the spec changes (for Deployments
  also when annotations change; for custom resources when anything but metadata — and status,
  if it is a subresource — changes);
* a handful of validations that clients actually hit (selectors, replicas, names, labels,
  immutable fields).
"""

from __future__ import annotations

import re
from typing import Any

from kube_emulator import cel_rules, crds, structural
from kube_emulator.errors import FieldError, forbidden, invalid, invalid_value, required
from kube_emulator.govalues import quote, string_map
from kube_emulator.jsonutil import JsonObject, json_equal
from kube_emulator.resources import ResourceType
from kube_emulator.selectors import LabelSelectorError, selector_from_label_selector

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_NAME = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

WORKLOADS = frozenset({"apps/deployments", "apps/statefulsets", "apps/replicasets"})
_REQUIRED_STATUS_FIELDS: dict[str, dict[str, int]] = {
    "apps/statefulsets": {"replicas": 0, "availableReplicas": 0},
    "apps/replicasets": {"replicas": 0},
    "policy/poddisruptionbudgets": {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    },
}
PODS = "/pods"
NAMESPACES = "/namespaces"


def name_problem(resource_type: ResourceType, name: str) -> FieldError | None:
    """Why ``name`` is not a valid object name for this kind, or ``None``."""
    if resource_type.name_rule == "label":
        if len(name) > 63 or not _DNS_LABEL.fullmatch(name):
            return invalid_value(
                "metadata.name",
                name,
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
                "must start and end with an alphanumeric character",
            )
    elif resource_type.name_rule == "subdomain":
        if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
            return invalid_value(
                "metadata.name",
                name,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character",
            )
    elif name in (".", "..") or "/" in name or "%" in name:
        return invalid_value("metadata.name", name, "may not contain '/' or '%' and may not be '.' or '..'")
    return None


# --- create ---------------------------------------------------------------------------------------


def prepare_for_create(resource_type: ResourceType, obj: JsonObject) -> None:
    """Reset status and apply defaults on an object about to be created (mutates ``obj``)."""
    key = resource_type.storage_key
    if key == crds.CRD_STORAGE_KEY:
        obj["status"] = crds.crd_status(obj)
    elif resource_type.has_status:
        if key == PODS:
            obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(obj.get("spec") or {})}
        elif key == NAMESPACES:
            obj["status"] = {"phase": "Active"}
        elif resource_type.builtin:
            # Counts that are not ``omitempty`` in the Go types are always present.
            obj["status"] = dict(_REQUIRED_STATUS_FIELDS.get(key, {}))
        else:
            obj.pop("status", None)
    apply_defaults(resource_type, obj)


def apply_defaults(resource_type: ResourceType, obj: JsonObject) -> None:
    """The defaults a client is likely to read back (the real server applies many more)."""
    key = resource_type.storage_key
    spec = obj.get("spec")
    if key in WORKLOADS and isinstance(spec, dict):
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        if key == "apps/deployments":
            spec.setdefault("progressDeadlineSeconds", 600)
            spec.setdefault(
                "strategy",
                {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            )
        if key == "apps/statefulsets":
            spec.setdefault("podManagementPolicy", "OrderedReady")
            spec.setdefault("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        template_spec = (spec.get("template") or {}).get("spec")
        if isinstance(template_spec, dict):
            _default_pod_spec(template_spec)
    elif key == PODS and isinstance(spec, dict):
        _default_pod_spec(spec)


def _default_pod_spec(spec: JsonObject) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")


def pod_qos_class(spec: JsonObject) -> str:
    """Guaranteed / Burstable / BestEffort from the containers' requests and limits."""
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(
        all(
            (r.get("limits") or {}).get(name) is not None
            and (r.get("requests") or {}).get(name, (r.get("limits") or {}).get(name))
            == (r.get("limits") or {}).get(name)
            for name in ("cpu", "memory")
        )
        for r in resources
    )
    return "Guaranteed" if guaranteed else "Burstable"


# --- update ---------------------------------------------------------------------------------------


def generation_changed(resource_type: ResourceType, old: JsonObject, new: JsonObject) -> bool:
    """Whether an update to the main resource bumps ``metadata.generation``."""
    if not resource_type.builtin:
        ignored = {"metadata", "status"} if resource_type.has_status else {"metadata"}
        keys = (set(old) | set(new)) - ignored
        return any(not json_equal(old.get(key), new.get(key)) for key in keys)
    if not json_equal(old.get("spec"), new.get("spec")):
        return True
    if resource_type.generation_tracks_annotations:
        return not json_equal(old["metadata"].get("annotations"), new["metadata"].get("annotations"))
    return False


# --- validation -----------------------------------------------------------------------------------


def validate(resource_type: ResourceType, obj: JsonObject, old: JsonObject | None) -> None:
    """Raise 422 Invalid when the object breaks a rule the real server enforces.

    On update, problems the stored object already had are tolerated ("ratcheting"): seeded
    objects skip validation, and a minimal seeded Deployment must still accept a scale or a
    status write.
    """
    causes = _problems(resource_type, obj, old)
    if causes and old is not None:
        inherited = {str(cause) for cause in _problems(resource_type, old, None)}
        causes = [cause for cause in causes if str(cause) not in inherited]
    if causes:
        raise invalid(resource_type.kind, resource_type.group, str(obj["metadata"].get("name", "")), causes)


def _problems(resource_type: ResourceType, obj: JsonObject, old: JsonObject | None) -> list[FieldError]:
    causes = _metadata_problems(obj, old)
    key = resource_type.storage_key
    if key in WORKLOADS:
        causes += _workload_problems(obj, old)
    elif key == PODS:
        causes += _pod_problems(obj, old)
    elif key == crds.CRD_STORAGE_KEY:
        causes += crds.validate_crd(obj)
    if resource_type.schema is not None:
        unchanged: frozenset[str] = frozenset()
        if old is not None:
            unchanged = frozenset(k for k, v in obj.items() if k in old and json_equal(v, old[k]))
        schema_causes = structural.validate(obj, resource_type.schema, unchanged=unchanged)
        causes += schema_causes
        causes += cel_rules.validate(obj, resource_type.schema, old, schema_causes, unchanged=unchanged)
    return causes


def _metadata_problems(obj: JsonObject, old: JsonObject | None) -> list[FieldError]:
    causes: list[FieldError] = []
    meta = obj["metadata"]
    for field in ("labels", "annotations"):
        if meta.get(field) is not None and not isinstance(meta.get(field), dict):
            causes.append(invalid_value(f"metadata.{field}", meta.get(field), "must be a map of strings"))
    for label, value in (meta.get("labels") or {}).items():
        prefix, _, name = str(label).rpartition("/")
        if (prefix and not _DNS_SUBDOMAIN.fullmatch(prefix)) or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
            causes.append(invalid_value("metadata.labels", label, "name part must be a valid label name"))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
            causes.append(invalid_value("metadata.labels", value, "a valid label must be 63 characters or less"))
    if old is not None and old["metadata"].get("deletionTimestamp"):
        added = set(meta.get("finalizers") or []) - set(old["metadata"].get("finalizers") or [])
        if added:
            causes.append(
                forbidden("metadata.finalizers", "no new finalizers can be added if the object is being deleted")
            )
    return causes


def _workload_problems(obj: JsonObject, old: JsonObject | None) -> list[FieldError]:
    causes: list[FieldError] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    replicas = spec.get("replicas")
    if replicas is not None and (not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0):
        causes.append(invalid_value("spec.replicas", replicas, "must be greater than or equal to 0"))
    selector_spec = spec.get("selector")
    if not isinstance(selector_spec, dict) or not (
        selector_spec.get("matchLabels") or selector_spec.get("matchExpressions")
    ):
        causes.append(required("spec.selector"))
    else:
        try:
            selector = selector_from_label_selector(selector_spec)
        except LabelSelectorError as problem:
            causes.append(invalid_value("spec.selector", None, str(problem), shown=_label_selector(selector_spec)))
        else:
            labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
            if selector is not None and not selector.matches(labels):
                causes.append(
                    invalid_value(
                        "spec.template.metadata.labels",
                        labels,
                        "`selector` does not match template `labels`",
                        shown=string_map(labels),
                    )
                )
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers")
    if not containers:
        causes.append(required("spec.template.spec.containers"))
    if old is not None and not json_equal(spec.get("selector"), (old.get("spec") or {}).get("selector")):
        shown = _label_selector(spec.get("selector") or {})
        causes.append(invalid_value("spec.selector", None, "field is immutable", shown=shown))
    return causes


def _label_selector(selector: JsonObject) -> str:
    """``%#v`` of a ``v1.LabelSelector``, as an immutable-selector error prints it."""
    match_labels = selector.get("matchLabels")
    labels = string_map(match_labels) if isinstance(match_labels, dict) else "map[string]string(nil)"
    expressions = selector.get("matchExpressions")
    if not expressions:
        rendered = "[]v1.LabelSelectorRequirement(nil)"
    else:
        items = ", ".join(
            f"v1.LabelSelectorRequirement{{Key:{quote(str(e.get('key', '')))}, "
            f"Operator:{quote(str(e.get('operator', '')))}, "
            f"Values:[]string{{{', '.join(quote(str(v)) for v in e.get('values') or [])}}}}}"
            for e in expressions
            if isinstance(e, dict)
        )
        rendered = f"[]v1.LabelSelectorRequirement{{{items}}}"
    return f"&v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{rendered}}}"


# Fields of a running pod's spec that may change (everything else is immutable).
_MUTABLE_POD_FIELDS = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")


def _pod_problems(obj: JsonObject, old: JsonObject | None) -> list[FieldError]:
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not spec.get("containers"):
        return [required("spec.containers")]
    causes = [
        required(f"spec.containers[{index}].name")
        for index, container in enumerate(spec["containers"])
        if not isinstance(container, dict) or not container.get("name")
    ]
    if old is not None and not _pod_spec_update_allowed(old.get("spec") or {}, spec):
        causes.append(
            forbidden(
                "spec",
                "pod updates may not change fields other than `spec.containers[*].image`, "
                "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations) "
                "or `spec.terminationGracePeriodSeconds`",
            )
        )
    return causes


def _pod_spec_update_allowed(old: JsonObject, new: JsonObject) -> bool:
    def without_mutable(spec: JsonObject) -> dict[str, Any]:
        trimmed = {key: value for key, value in spec.items() if key not in _MUTABLE_POD_FIELDS}
        trimmed["containers"] = [
            {k: v for k, v in container.items() if k != "image"} for container in spec.get("containers") or []
        ]
        return trimmed

    return json_equal(without_mutable(old), without_mutable(new))
