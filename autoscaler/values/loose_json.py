"""Reading decoded JSON whose shape nobody promised: an object's part that should be an object or a list,
taken as an empty one when it is not.

The service reads documents that anyone may have written: a custom resource's status (its CRD may not
say what is inside), another autoscaler's spec, a status the service wrote itself under an older version,
a pod a test wrote by hand. A read of such a document never raises on an odd shape; it takes what it can
use and leaves the rest. These three are the one place that says what "what it can use" means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["as_list", "as_mapping", "mappings_in"]


def as_mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one."""
    # A decoded JSON object is a dict: the exact type check answers most calls before the ABC check does.
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Any]:
    """``value`` when it is a list (its items as they are, whatever their type), else an empty one."""
    return value if isinstance(value, list) else []


def mappings_in(value: object) -> list[Mapping[str, Any]]:
    """The items of ``value`` that are objects, when it is a list; else an empty list.

    For a list of records (events, recommendations, policies) where an item of another type cannot be
    read at all and is skipped rather than failing the whole list."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []
