"""The API server's printer columns for the built-in kinds people look at (``kubectl get pods``, ``…
deployments``, ``… events``, ``… rolebindings`` and more), as ``pkg/printers/internalversion`` defines them.

:data:`BUILTIN_COLUMNS` maps a kind's storage key to its columns (priority 1: only with ``-o wide``);
other built-in kinds get :data:`DEFAULT_COLUMNS`, Name and "Created At", as the default table convertor
does. Cells the real printers derive from state the emulator does not model (container restarts' last
time, node roles…) are simplified.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from kube_emulator.columns import AGE, CREATED_AT, NAME, Column, integer_at, name_cell, since, text_at, value_at
from kube_emulator.jsonutil import JsonObject


def _containers(obj: JsonObject) -> list[JsonObject]:
    found = value_at(obj, "spec", "template", "spec", "containers") or []
    return [container for container in found if isinstance(container, dict)]


def _container_names(obj: JsonObject, _now: datetime) -> str:
    return ",".join(str(container.get("name", "")) for container in _containers(obj))


def _images(obj: JsonObject, _now: datetime) -> str:
    return ",".join(str(container.get("image", "")) for container in _containers(obj))


def _selector(obj: JsonObject, _now: datetime) -> str:
    selector = value_at(obj, "spec", "selector")
    if not isinstance(selector, dict):
        return "<none>"
    terms = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        operator, key = expression.get("operator"), expression.get("key")
        values = ",".join(sorted(str(value) for value in expression.get("values") or []))
        terms.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": str(key),
                "DoesNotExist": f"!{key}",
            }.get(str(operator), "")
        )
    return ",".join(terms) or "<none>"


def _pod_ready(obj: JsonObject, _now: datetime) -> str:
    statuses = value_at(obj, "status", "containerStatuses") or []
    ready = sum(1 for status in statuses if isinstance(status, dict) and status.get("ready"))
    return f"{ready}/{len(value_at(obj, 'spec', 'containers') or [])}"


def _pod_status(obj: JsonObject, _now: datetime) -> str:
    if obj["metadata"].get("deletionTimestamp"):
        return "Terminating"
    for status in value_at(obj, "status", "containerStatuses") or []:
        waiting = value_at(status, "state", "waiting", "reason")
        if waiting:
            return str(waiting)
    return str(value_at(obj, "status", "reason") or value_at(obj, "status", "phase") or "Unknown")


def _pod_restarts(obj: JsonObject, _now: datetime) -> str:
    statuses = value_at(obj, "status", "containerStatuses") or []
    return str(sum(integer_at(status, "restartCount") for status in statuses if isinstance(status, dict)))


def _readiness_gates(obj: JsonObject, _now: datetime) -> str:
    gates = value_at(obj, "spec", "readinessGates") or []
    if not gates:
        return "<none>"
    conditions = {c.get("type"): c.get("status") for c in value_at(obj, "status", "conditions") or []}
    return f"{sum(1 for gate in gates if conditions.get(gate.get('conditionType')) == 'True')}/{len(gates)}"


def _event_last_seen(obj: JsonObject, now: datetime) -> str:
    last = obj.get("lastTimestamp") or obj.get("eventTime") or obj.get("firstTimestamp")
    first = obj.get("firstTimestamp") or obj.get("eventTime")
    count = obj.get("count") or value_at(obj, "series", "count") or 1
    seen = since(last, now)
    return f"{seen} (x{count} over {since(first, now)})" if isinstance(count, int) and count > 1 else seen


def _event_object(obj: JsonObject, _now: datetime) -> str:
    involved = obj.get("involvedObject") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_source(obj: JsonObject, _now: datetime) -> str:
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    return f"{component}, {source['host']}" if source.get("host") else str(component)


def _binding_subjects(kind: str) -> Callable[[JsonObject, datetime], str]:
    def cell(obj: JsonObject, _now: datetime) -> str:
        names = [
            (f"{s.get('namespace')}/{s.get('name')}" if kind == "ServiceAccount" else str(s.get("name")))
            for s in obj.get("subjects") or []
            if isinstance(s, dict) and s.get("kind") == kind
        ]
        return ", ".join(names)

    return cell


def _service_ports(obj: JsonObject, _now: datetime) -> str:
    ports = []
    for port in value_at(obj, "spec", "ports") or []:
        text = f"{port.get('port')}/{port.get('protocol', 'TCP')}"
        if port.get("nodePort"):
            text = f"{port.get('port')}:{port['nodePort']}/{port.get('protocol', 'TCP')}"
        ports.append(text)
    return ",".join(ports) or "<none>"


def _count_of(*path: str) -> Callable[[JsonObject, datetime], int]:
    return lambda obj, _now: len(value_at(obj, *path) or {})


def _int_or_string(*path: str) -> Callable[[JsonObject, datetime], str]:
    return lambda obj, _now: "N/A" if value_at(obj, *path) is None else str(value_at(obj, *path))


def _column(name: str, cell: Callable[[JsonObject, datetime], Any], type_: str = "string", priority: int = 0) -> Column:
    return Column(name, type_, cell, priority=priority)


_WORKLOAD_WIDE = (
    _column("Containers", _container_names, priority=1),
    _column("Images", _images, priority=1),
)
_BINDING = (
    NAME,
    _column("Role", lambda obj, _: f"{value_at(obj, 'roleRef', 'kind')}/{value_at(obj, 'roleRef', 'name')}"),
    AGE,
    _column("Users", _binding_subjects("User"), priority=1),
    _column("Groups", _binding_subjects("Group"), priority=1),
    _column("ServiceAccounts", _binding_subjects("ServiceAccount"), priority=1),
)


def _ready_of_desired(obj: JsonObject, _now: datetime) -> str:
    return f"{integer_at(obj, 'status', 'readyReplicas')}/{integer_at(obj, 'spec', 'replicas')}"


def _service_selector(obj: JsonObject, _now: datetime) -> str:
    selector = value_at(obj, "spec", "selector") or {}
    return ",".join(f"{key}={value}" for key, value in sorted(selector.items())) or "<none>"


def _data_count(obj: JsonObject, _now: datetime) -> int:
    return len(obj.get("data") or {}) + len(obj.get("binaryData") or {})


def _first_seen(obj: JsonObject, now: datetime) -> str:
    return since(obj.get("firstTimestamp") or obj.get("eventTime"), now)


_ROLE = (NAME, _column("Created At", lambda obj, _: obj["metadata"].get("creationTimestamp", "")))

BUILTIN_COLUMNS: Mapping[str, tuple[Column, ...]] = {
    "/pods": (
        NAME,
        _column("Ready", _pod_ready),
        _column("Status", _pod_status),
        _column("Restarts", _pod_restarts),
        AGE,
        _column("IP", lambda obj, _: text_at(obj, "status", "podIP"), priority=1),
        _column("Node", lambda obj, _: text_at(obj, "spec", "nodeName"), priority=1),
        _column("Nominated Node", lambda obj, _: text_at(obj, "status", "nominatedNodeName"), priority=1),
        _column("Readiness Gates", _readiness_gates, priority=1),
    ),
    "apps/deployments": (
        NAME,
        _column("Ready", _ready_of_desired),
        _column("Up-to-date", lambda obj, _: integer_at(obj, "status", "updatedReplicas"), "integer"),
        _column("Available", lambda obj, _: integer_at(obj, "status", "availableReplicas"), "integer"),
        AGE,
        *_WORKLOAD_WIDE,
        _column("Selector", _selector, priority=1),
    ),
    "apps/statefulsets": (
        NAME,
        _column("Ready", _ready_of_desired),
        AGE,
        *_WORKLOAD_WIDE,
    ),
    "apps/replicasets": (
        NAME,
        _column("Desired", lambda obj, _: integer_at(obj, "spec", "replicas"), "integer"),
        _column("Current", lambda obj, _: integer_at(obj, "status", "replicas"), "integer"),
        _column("Ready", lambda obj, _: integer_at(obj, "status", "readyReplicas"), "integer"),
        AGE,
        *_WORKLOAD_WIDE,
        _column("Selector", _selector, priority=1),
    ),
    "/namespaces": (NAME, _column("Status", lambda obj, _: text_at(obj, "status", "phase", empty="")), AGE),
    "/events": (
        _column("Last Seen", _event_last_seen),
        _column("Type", lambda obj, _: text_at(obj, "type", empty="")),
        _column("Reason", lambda obj, _: text_at(obj, "reason", empty="")),
        _column("Object", _event_object),
        _column("Subobject", lambda obj, _: text_at(obj, "involvedObject", "fieldPath", empty=""), priority=1),
        _column("Source", _event_source, priority=1),
        _column("Message", lambda obj, _: text_at(obj, "message", empty="").strip()),
        _column("First Seen", _first_seen, priority=1),
        _column("Count", lambda obj, _: str(obj.get("count") or 1), priority=1),
        Column("Name", "string", name_cell, format="name", priority=1),
    ),
    "coordination.k8s.io/leases": (
        NAME,
        _column("Holder", lambda obj, _: text_at(obj, "spec", "holderIdentity", empty="")),
        AGE,
    ),
    "/services": (
        NAME,
        _column("Type", lambda obj, _: text_at(obj, "spec", "type", empty="ClusterIP")),
        _column("Cluster-IP", lambda obj, _: text_at(obj, "spec", "clusterIP")),
        _column("External-IP", lambda obj, _: ",".join(value_at(obj, "spec", "externalIPs") or []) or "<none>"),
        _column("Port(s)", _service_ports),
        AGE,
        _column("Selector", _service_selector, priority=1),
    ),
    "/configmaps": (NAME, _column("Data", _data_count, "integer"), AGE),
    "/secrets": (
        NAME,
        _column("Type", lambda obj, _: text_at(obj, "type", empty="Opaque")),
        _column("Data", lambda obj, _: len(obj.get("data") or {}), "integer"),
        AGE,
    ),
    "/serviceaccounts": (NAME, _column("Secrets", _count_of("secrets"), "integer"), AGE),
    "rbac.authorization.k8s.io/roles": _ROLE,
    "rbac.authorization.k8s.io/clusterroles": _ROLE,
    "rbac.authorization.k8s.io/rolebindings": _BINDING,
    "rbac.authorization.k8s.io/clusterrolebindings": _BINDING,
    "policy/poddisruptionbudgets": (
        NAME,
        _column("Min Available", _int_or_string("spec", "minAvailable")),
        _column("Max Unavailable", _int_or_string("spec", "maxUnavailable")),
        _column("Allowed Disruptions", lambda obj, _: integer_at(obj, "status", "disruptionsAllowed"), "integer"),
        AGE,
    ),
    "/nodes": (
        NAME,
        _column("Status", lambda obj, _: _node_status(obj)),
        _column("Roles", lambda obj, _: "<none>"),
        AGE,
        _column("Version", lambda obj, _: text_at(obj, "status", "nodeInfo", "kubeletVersion", empty="")),
    ),
}
DEFAULT_COLUMNS = (NAME, CREATED_AT)


def _node_status(obj: JsonObject) -> str:
    for condition in value_at(obj, "status", "conditions") or []:
        if condition.get("type") == "Ready":
            return "Ready" if condition.get("status") == "True" else "NotReady"
    return "Unknown"
