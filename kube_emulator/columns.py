"""A Table's columns: the :class:`Column` type, the columns every kind shares, and what cells are made of.

A column's cell is a function of the object (in the endpoint's representation) and the moment the Table is
built: ages are printed as the API server prints them (:func:`human_duration`, :func:`since`), values are
read along a path with the empty and missing cases the printers show (:func:`value_at`, :func:`integer_at`,
:func:`text_at`). The built-in kinds' columns are in :mod:`kube_emulator.printers`, the Table itself in
:mod:`kube_emulator.tables`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kube_emulator.jsonutil import JsonObject


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


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: the age of a timestamp, ``<unknown>`` without one."""
    moment = parse_time(value)
    return "<unknown>" if moment is None else human_duration((now - moment).total_seconds())


def _age(obj: JsonObject, now: datetime) -> str:
    return since(obj["metadata"].get("creationTimestamp"), now)


def name_cell(obj: JsonObject, _now: datetime) -> str:
    return str(obj["metadata"].get("name", ""))


def value_at(obj: Any, *path: str) -> Any:
    for step in path:
        obj = obj.get(step) if isinstance(obj, Mapping) else None
    return obj


def integer_at(obj: JsonObject, *path: str) -> int:
    value = value_at(obj, *path)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def text_at(obj: JsonObject, *path: str, empty: str = "<none>") -> str:
    value = value_at(obj, *path)
    return empty if value in (None, "") else str(value)


NAME = Column("Name", "string", name_cell, format="name", description="Name must be unique within a namespace.")
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
