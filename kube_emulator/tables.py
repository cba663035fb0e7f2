"""``meta.k8s.io/v1`` Table responses: what ``kubectl get`` asks for and prints.

kubectl sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io, …`` and prints the server's
columns. Custom resources get Name plus their CRD's ``additionalPrinterColumns`` (Age alone if none), with
``date`` cells left as timestamps for kubectl to turn into ages; built-in kinds get the columns of the
API server's printers (``pkg/printers/internalversion``) for the kinds people look at, and Name plus
"Created At" (the default table convertor) for the rest (:mod:`kube_emulator.printers`). Here: which
Table a request asks for, a CRD's columns and the Table itself; a column's parts are in
:mod:`kube_emulator.columns`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from kube_emulator.columns import NAME, Column, parse_time, since
from kube_emulator.jsonutil import JsonObject
from kube_emulator.printers import BUILTIN_COLUMNS, DEFAULT_COLUMNS
from kube_emulator.resources import PrinterColumn, ResourceType

TABLE_VERSIONS = ("v1", "v1beta1")


def table_version(accept: str) -> str | None:
    """The meta.k8s.io version of a Table the Accept header asks for first, or ``None``."""
    for media_range in accept.split(","):
        parameters = dict(part.strip().partition("=")[::2] for part in media_range.split(";")[1:] if "=" in part)
        is_table = parameters.get("as") == "Table" and parameters.get("g") == "meta.k8s.io"
        if is_table and parameters.get("v") in TABLE_VERSIONS:
            return parameters["v"]
    return None


# --- custom resources -----------------------------------------------------------------------------------

_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\[\?\(@\.([A-Za-z0-9_]+)\s*==\s*(?:\"([^\"]*)\"|'([^']*)')\)\]")


def json_path_value(obj: Any, path: str) -> Any:
    """A printer column's JSONPath (``.status.currentReplicas``, ``.spec.containers[0].image``,
    ``.status.conditions[?(@.type=="Ready")].status``); ``None`` where nothing is. A filter keeps the
    first item it matches, as the table convertor shows a path's first result."""
    position, value = 0, obj
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    while position < len(text):
        match = _STEP.match(text, position)
        if match is None:
            return None
        key, index, field, wanted, quoted = match.groups()
        if key is not None:
            value = value.get(key) if isinstance(value, dict) else None
        elif field is not None:
            wanted = wanted if wanted is not None else quoted
            items = value if isinstance(value, list) else []
            value = next((i for i in items if isinstance(i, dict) and i.get(field) == wanted), None)
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
            return since(value, now) if parse_time(value) else ("<invalid>" if isinstance(value, str) else None)
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
