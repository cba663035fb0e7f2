"""``meta.k8s.io/v1`` Table responses: what ``kubectl get`` asks for and prints.

kubectl sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io, …`` and prints the server's
columns. Custom resources get Name plus their CRD's ``additionalPrinterColumns`` (Age alone if none), with
``date`` cells left as timestamps for kubectl to turn into ages; built-in kinds get the columns of the
API server's printers (``pkg/printers/internalversion``) for the kinds people look at, and Name plus
"Created At" (the default table convertor) for the rest. Cells that the real printers derive from state
the emulator does not model (container restarts' last time, node roles…) are simplified.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kube_emulator.jsonutil import JsonObject
from kube_emulator.resources import PrinterColumn, ResourceType

TABLE_VERSIONS = ("v1", "v1beta1")


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    cell: Callable[[JsonObject, datetime], Any]
    format: str = ""
    priority: int = 0
    description: str = ""

    def definition(self) -> JsonObject:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


def table_version(accept: str) -> str | None:
    """The meta.k8s.io version of a Table the Accept header asks for first, or ``None``."""
    for media_range in accept.split(","):
        parameters = dict(part.strip().partition("=")[::2] for part in media_range.split(";")[1:] if "=" in part)
        is_table = parameters.get("as") == "Table" and parameters.get("g") == "meta.k8s.io"
        if is_table and parameters.get("v") in TABLE_VERSIONS:
            return parameters["v"]
    return None


# --- durations and cells ----------------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: 45s, 3m20s, 25m, 5h10m, 3d4h, 400d, 2y30d."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        return f"{minutes}m" if whole % 60 == 0 else f"{minutes}m{whole % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: the age of a timestamp, ``<unknown>`` without one."""
    moment = _parse_time(value)
    return "<unknown>" if moment is None else human_duration((now - moment).total_seconds())


def _age(obj: JsonObject, now: datetime) -> str:
    return since(obj["metadata"].get("creationTimestamp"), now)


def _name(obj: JsonObject, _now: datetime) -> str:
    return str(obj["metadata"].get("name", ""))


def _at(obj: Any, *path: str) -> Any:
    for step in path:
        obj = obj.get(step) if isinstance(obj, Mapping) else None
    return obj


def _integer(obj: JsonObject, *path: str) -> int:
    value = _at(obj, *path)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text(obj: JsonObject, *path: str, empty: str = "<none>") -> str:
    value = _at(obj, *path)
    return empty if value in (None, "") else str(value)


NAME = Column("Name", "string", _name, format="name", description="Name must be unique within a namespace.")
AGE = Column(
    "Age",
    "string",
    _age,
    description="CreationTimestamp is a timestamp representing the server time when this object was created.",
)
CREATED_AT = Column(
    "Created At",
    "date",
    lambda obj, _: obj["metadata"].get("creationTimestamp"),
    description="CreationTimestamp is a timestamp representing the server time when this object was created.",
)


# --- built-in kinds -------------------------------------------------------------------------------------


def _containers(obj: JsonObject) -> list[JsonObject]:
    found = _at(obj, "spec", "template", "spec", "containers") or []
    return [container for container in found if isinstance(container, dict)]


def _container_names(obj: JsonObject, _now: datetime) -> str:
    return ",".join(str(container.get("name", "")) for container in _containers(obj))


def _images(obj: JsonObject, _now: datetime) -> str:
    return ",".join(str(container.get("image", "")) for container in _containers(obj))


def _selector(obj: JsonObject, _now: datetime) -> str:
    selector = _at(obj, "spec", "selector")
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
    statuses = _at(obj, "status", "containerStatuses") or []
    ready = sum(1 for status in statuses if isinstance(status, dict) and status.get("ready"))
    return f"{ready}/{len(_at(obj, 'spec', 'containers') or [])}"


def _pod_status(obj: JsonObject, _now: datetime) -> str:
    if obj["metadata"].get("deletionTimestamp"):
        return "Terminating"
    for status in _at(obj, "status", "containerStatuses") or []:
        waiting = _at(status, "state", "waiting", "reason")
        if waiting:
            return str(waiting)
    return str(_at(obj, "status", "reason") or _at(obj, "status", "phase") or "Unknown")


def _pod_restarts(obj: JsonObject, _now: datetime) -> str:
    statuses = _at(obj, "status", "containerStatuses") or []
    return str(sum(_integer(status, "restartCount") for status in statuses if isinstance(status, dict)))


def _readiness_gates(obj: JsonObject, _now: datetime) -> str:
    gates = _at(obj, "spec", "readinessGates") or []
    if not gates:
        return "<none>"
    conditions = {c.get("type"): c.get("status") for c in _at(obj, "status", "conditions") or []}
    return f"{sum(1 for gate in gates if conditions.get(gate.get('conditionType')) == 'True')}/{len(gates)}"


def _event_last_seen(obj: JsonObject, now: datetime) -> str:
    last = obj.get("lastTimestamp") or obj.get("eventTime") or obj.get("firstTimestamp")
    first = obj.get("firstTimestamp") or obj.get("eventTime")
    count = obj.get("count") or _at(obj, "series", "count") or 1
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
    for port in _at(obj, "spec", "ports") or []:
        text = f"{port.get('port')}/{port.get('protocol', 'TCP')}"
        if port.get("nodePort"):
            text = f"{port.get('port')}:{port['nodePort']}/{port.get('protocol', 'TCP')}"
        ports.append(text)
    return ",".join(ports) or "<none>"


def _count_of(*path: str) -> Callable[[JsonObject, datetime], int]:
    return lambda obj, _now: len(_at(obj, *path) or {})


def _int_or_string(*path: str) -> Callable[[JsonObject, datetime], str]:
    return lambda obj, _now: "N/A" if _at(obj, *path) is None else str(_at(obj, *path))


def _column(name: str, cell: Callable[[JsonObject, datetime], Any], type_: str = "string", priority: int = 0) -> Column:
    return Column(name, type_, cell, priority=priority)


_WORKLOAD_WIDE = (
    _column("Containers", _container_names, priority=1),
    _column("Images", _images, priority=1),
)
_BINDING = (
    NAME,
    _column("Role", lambda obj, _: f"{_at(obj, 'roleRef', 'kind')}/{_at(obj, 'roleRef', 'name')}"),
    AGE,
    _column("Users", _binding_subjects("User"), priority=1),
    _column("Groups", _binding_subjects("Group"), priority=1),
    _column("ServiceAccounts", _binding_subjects("ServiceAccount"), priority=1),
)


def _ready_of_desired(obj: JsonObject, _now: datetime) -> str:
    return f"{_integer(obj, 'status', 'readyReplicas')}/{_integer(obj, 'spec', 'replicas')}"


def _service_selector(obj: JsonObject, _now: datetime) -> str:
    selector = _at(obj, "spec", "selector") or {}
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
        _column("IP", lambda obj, _: _text(obj, "status", "podIP"), priority=1),
        _column("Node", lambda obj, _: _text(obj, "spec", "nodeName"), priority=1),
        _column("Nominated Node", lambda obj, _: _text(obj, "status", "nominatedNodeName"), priority=1),
        _column("Readiness Gates", _readiness_gates, priority=1),
    ),
    "apps/deployments": (
        NAME,
        _column("Ready", _ready_of_desired),
        _column("Up-to-date", lambda obj, _: _integer(obj, "status", "updatedReplicas"), "integer"),
        _column("Available", lambda obj, _: _integer(obj, "status", "availableReplicas"), "integer"),
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
        _column("Desired", lambda obj, _: _integer(obj, "spec", "replicas"), "integer"),
        _column("Current", lambda obj, _: _integer(obj, "status", "replicas"), "integer"),
        _column("Ready", lambda obj, _: _integer(obj, "status", "readyReplicas"), "integer"),
        AGE,
        *_WORKLOAD_WIDE,
        _column("Selector", _selector, priority=1),
    ),
    "/namespaces": (NAME, _column("Status", lambda obj, _: _text(obj, "status", "phase", empty="")), AGE),
    "/events": (
        _column("Last Seen", _event_last_seen),
        _column("Type", lambda obj, _: _text(obj, "type", empty="")),
        _column("Reason", lambda obj, _: _text(obj, "reason", empty="")),
        _column("Object", _event_object),
        _column("Subobject", lambda obj, _: _text(obj, "involvedObject", "fieldPath", empty=""), priority=1),
        _column("Source", _event_source, priority=1),
        _column("Message", lambda obj, _: _text(obj, "message", empty="").strip()),
        _column("First Seen", _first_seen, priority=1),
        _column("Count", lambda obj, _: str(obj.get("count") or 1), priority=1),
        Column("Name", "string", _name, format="name", priority=1),
    ),
    "coordination.k8s.io/leases": (
        NAME,
        _column("Holder", lambda obj, _: _text(obj, "spec", "holderIdentity", empty="")),
        AGE,
    ),
    "/services": (
        NAME,
        _column("Type", lambda obj, _: _text(obj, "spec", "type", empty="ClusterIP")),
        _column("Cluster-IP", lambda obj, _: _text(obj, "spec", "clusterIP")),
        _column("External-IP", lambda obj, _: ",".join(_at(obj, "spec", "externalIPs") or []) or "<none>"),
        _column("Port(s)", _service_ports),
        AGE,
        _column("Selector", _service_selector, priority=1),
    ),
    "/configmaps": (NAME, _column("Data", _data_count, "integer"), AGE),
    "/secrets": (
        NAME,
        _column("Type", lambda obj, _: _text(obj, "type", empty="Opaque")),
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
        _column("Allowed Disruptions", lambda obj, _: _integer(obj, "status", "disruptionsAllowed"), "integer"),
        AGE,
    ),
    "/nodes": (
        NAME,
        _column("Status", lambda obj, _: _node_status(obj)),
        _column("Roles", lambda obj, _: "<none>"),
        AGE,
        _column("Version", lambda obj, _: _text(obj, "status", "nodeInfo", "kubeletVersion", empty="")),
    ),
}
DEFAULT_COLUMNS = (NAME, CREATED_AT)


def _node_status(obj: JsonObject) -> str:
    for condition in _at(obj, "status", "conditions") or []:
        if condition.get("type") == "Ready":
            return "Ready" if condition.get("status") == "True" else "NotReady"
    return "Unknown"


# --- custom resources -----------------------------------------------------------------------------------

_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def json_path_value(obj: Any, path: str) -> Any:
    """A printer column's JSONPath (``.status.currentReplicas``, ``.spec.containers[0].image``); ``None``
    where nothing is (or where the path uses filters, which are not evaluated here)."""
    position, value = 0, obj
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    while position < len(text):
        match = _STEP.match(text, position)
        if match is None:
            return None
        key, index = match.groups()
        if key is not None:
            value = value.get(key) if isinstance(value, dict) else None
        else:
            value = value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
        position = match.end()
    return value


def _custom_cell(column: PrinterColumn) -> Callable[[JsonObject, datetime], Any]:
    """The apiextensions table convertor's ``cellForJSONValue``: a cell of the column's type, or null."""

    def cell(obj: JsonObject, now: datetime) -> Any:
        value = json_path_value(obj, column.json_path)
        if value is None:
            return None
        if column.type == "string":
            if isinstance(value, bool):
                return "true" if value else "false"
            return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        if column.type == "date":
            return since(value, now) if _parse_time(value) else ("<invalid>" if isinstance(value, str) else None)
        if isinstance(value, bool):
            return value if column.type == "boolean" else None
        if column.type == "integer" and isinstance(value, int | float):
            return int(value)
        if column.type == "number" and isinstance(value, int | float):
            return value
        return None

    return cell


def columns_for(resource_type: ResourceType) -> tuple[Column, ...]:
    if not resource_type.builtin:
        return (
            NAME,
            *(
                Column(c.name, c.type, _custom_cell(c), c.format, c.priority, c.description)
                for c in resource_type.printer_columns
            ),
        )
    return BUILTIN_COLUMNS.get(resource_type.storage_key, DEFAULT_COLUMNS)


# --- the Table ------------------------------------------------------------------------------------------


def _row_object(obj: JsonObject, include: str) -> JsonObject | None:
    if include == "Object":
        return obj
    if include == "None":
        return None
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def table(
    resource_type: ResourceType,
    objects: Iterable[JsonObject],
    now: datetime,
    *,
    version: str = "v1",
    include_object: str = "PartialObjectMetadata",
    headers: bool = True,
    list_meta: JsonObject | None = None,
) -> JsonObject:
    """A Table of ``objects`` (already in the endpoint's representation)."""
    columns = columns_for(resource_type)
    rows = []
    for obj in objects:
        row: JsonObject = {"cells": [column.cell(obj, now) for column in columns]}
        embedded = _row_object(obj, include_object)
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    result: JsonObject = {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": dict(list_meta or {}),
        "columnDefinitions": [column.definition() for column in columns] if headers else None,
        "rows": rows,
    }
    return result
