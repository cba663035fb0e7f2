"""The emulator checks a custom resource with ``fastjsonschema``'s compiled form of its schema first, and only
a write that form refuses goes through ``jsonschema`` for the full list of problems (kube_emulator/structural.py).
The fast check is only sound if it never accepts what ``jsonschema`` refuses: checked here on the repository's
ScalingTarget CRD, on objects changed at random from valid ones (a leaf of another type, a key gone, an unknown key)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube_emulator import structural
from tests.manifests import load_documents
from tests.schemas import crd_version_schema
from tests.service.cluster import CRD, target

STATUS: dict[str, Any] = {
    "currentReplicas": 2,
    "desiredReplicas": 4,
    "currentMetrics": [{"type": "External", "external": {"metric": {"name": "q"}, "current": {"averageValue": "0"}}}],
    "conditions": [
        {
            "type": "AbleToScale",
            "status": "True",
            "reason": "SucceededRescale",
            "message": "m",
            "lastTransitionTime": "2026-11-28T05:19:35Z",
        },
    ],
    "history": {
        "recommendations": [{"replicas": 4, "at": "2026-11-28T05:19:35.016087Z"}],
        "scaleUpEvents": [],
        "scaleDownEvents": [],
    },
    "lastDecision": {
        "time": "2026-11-28T05:19:35Z",
        "currentReplicas": 2,
        "proposal": 4,
        "replicas": 4,
        "scaled": True,
        "reason": "r",
        "explanation": ["a"],
    },
    "observedGeneration": 1,
    "lastScaleTime": "2026-11-28T05:19:35Z",
}

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)


def valid_object() -> dict[str, Any]:
    obj = target("web", "web")
    obj["status"] = copy.deepcopy(STATUS)
    return obj


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths(child, (*prefix, index))
    return found


@st.composite
def changed_objects(draw: st.DrawFn) -> dict[str, Any]:
    obj = valid_object()
    for _ in range(draw(st.integers(1, 3))):
        changeable = [p for p in paths(obj) if p and p[0] in ("spec", "status")]
        if not changeable:  # an earlier change deleted both spec and status
            break
        path = draw(st.sampled_from(changeable))
        parent = obj
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(parent[path[-1]], dict):
            parent[path[-1]][draw(st.text(min_size=1, max_size=6))] = draw(JSON_VALUES)
        else:
            parent[path[-1]] = draw(JSON_VALUES)
    return obj


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return crd_version_schema(load_documents(CRD)[0], "v1alpha1")


def test_the_fast_check_compiles_the_crd_and_finds_a_valid_object_valid(schema: dict[str, Any]) -> None:
    _, fast = structural._validators(schema)
    assert fast is not None  # otherwise every write would take the slow path
    assert structural.validate(valid_object(), schema) == []


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obj=changed_objects())
def test_the_fast_check_accepts_exactly_what_jsonschema_accepts(schema: dict[str, Any], obj: dict[str, Any]) -> None:
    full, fast = structural._validators(schema)
    assert fast is not None
    refused_by_full = any(True for _ in full.iter_errors(obj))
    try:
        fast(obj)
        refused_by_fast = False
    except structural.fastjsonschema.JsonSchemaValueException:
        refused_by_fast = True
    assert refused_by_fast == refused_by_full
    assert (structural.validate(obj, schema) != []) == refused_by_full


def test_a_schema_the_fast_check_cannot_compile_is_checked_by_jsonschema_alone() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": "(?<!x"}}}
    _, fast = structural._validators(schema)
    assert fast is None  # a pattern that is no regular expression: fastjsonschema compiles patterns up front
    causes = structural.validate({"name": 5}, schema)
    assert [(cause.field, cause.type) for cause in causes] == [("name", "FieldValueTypeInvalid")]
