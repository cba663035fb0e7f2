"""Representation changes between endpoints that share storage.

``events.k8s.io/v1`` Events are the same objects as ``core/v1`` Events with renamed fields, so
an Event written through either API is visible through both (as in a real cluster). Storage
holds the core/v1 shape.
"""

from __future__ import annotations

from kube_emulator.jsonutil import JsonObject, clone
from kube_emulator.resources import Converter

# events.k8s.io/v1 field → core/v1 field
_EVENTS_V1_TO_CORE: dict[str, str] = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_CORE_TO_EVENTS_V1 = {core: new for new, core in _EVENTS_V1_TO_CORE.items()}


def _rename(obj: JsonObject, names: dict[str, str], api_version: str) -> JsonObject:
    converted = {names.get(key, key): clone(value) for key, value in obj.items()}
    converted["apiVersion"] = api_version
    return converted


def events_v1_to_core(obj: JsonObject) -> JsonObject:
    return _rename(obj, _EVENTS_V1_TO_CORE, "v1")


def core_to_events_v1(obj: JsonObject) -> JsonObject:
    return _rename(obj, _CORE_TO_EVENTS_V1, "events.k8s.io/v1")


EVENTS_V1_CONVERTER = Converter(to_storage=events_v1_to_core, from_storage=core_to_events_v1)
