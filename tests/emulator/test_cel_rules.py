"""The emulator's CEL rules (``x-kubernetes-validations``) on custom resources: a rule true or false, its message,
``fieldPath`` and ``reason``, a rule on a list item, a transition rule (``oldSelf``), an evaluation error, the
rules left unchecked after a type error, and a CRD whose rule does not compile refused. The expected causes
are the API server's (``field.Error`` formatting, the schema's type as the value shown)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kube_emulator import KubeEmulator
from kube_emulator.errors import ApiError
from tests.manifests import MANIFESTS

RULES = [
    {"rule": "self.min <= self.max", "message": "max must be at least min", "fieldPath": ".max"},
    {
        "rule": "!has(self.owner) || self.owner != ''",
        "message": "owner must not be empty",
        "reason": "FieldValueRequired",
    },
    {"rule": "self.max == oldSelf.max || self.max > oldSelf.max", "message": "max may only grow"},
    {"rule": "self.min >= 0"},  # no message: "failed rule: <rule>"
]
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.dev"},
    "spec": {
        "group": "example.dev",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-validations": RULES,
                                "properties": {
                                    "min": {"type": "integer"},
                                    "max": {"type": "integer"},
                                    "owner": {"type": "string", "maxLength": 3},
                                    "color": {"type": "string", "enum": ["red", "blue"]},
                                    "parts": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "x-kubernetes-validations": [
                                                {
                                                    "rule": "self.name.startsWith('p-')",
                                                    "message": "a part is named p-…",
                                                },
                                                {"rule": "self.size > 0", "message": "unused"},
                                            ],
                                            "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
                                        },
                                    },
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


def gadget(spec: dict[str, Any], name: str = "g") -> dict[str, Any]:
    return {"apiVersion": "example.dev/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


def causes(problem: pytest.ExceptionInfo[ApiError]) -> list[tuple[str, str, str]]:
    assert problem.value.code == 422 and problem.value.details is not None
    return sorted((c["field"], c["reason"], c["message"]) for c in problem.value.details["causes"])


@pytest.fixture
def emu() -> KubeEmulator:
    emulator = KubeEmulator()
    emulator.create(CRD)
    return emulator


def test_a_true_rule_admits_and_a_false_one_is_a_cause_at_its_field_path(emu: KubeEmulator) -> None:
    emu.create(gadget({"min": 1, "max": 3, "owner": "me"}))
    with pytest.raises(ApiError) as refused:
        emu.create(gadget({"min": 4, "max": 3, "owner": ""}, name="h"))
    assert causes(refused) == [
        ("spec", "FieldValueRequired", "Required value: owner must not be empty"),
        ("spec.max", "FieldValueInvalid", 'Invalid value: "object": max must be at least min'),
    ]
    assert str(refused.value).startswith('Gadget.example.dev "h" is invalid: [')
    with pytest.raises(ApiError) as no_message:
        emu.create(gadget({"min": -1, "max": 3}, name="i"))
    assert causes(no_message) == [("spec", "FieldValueInvalid", 'Invalid value: "object": failed rule: self.min >= 0')]


def test_a_rule_on_list_items_is_checked_on_each_item_at_its_index(emu: KubeEmulator) -> None:
    parts = [{"name": "p-1", "size": 1}, {"name": "wheel", "size": 2}, {"name": "p-3"}]
    with pytest.raises(ApiError) as refused:
        emu.create(gadget({"min": 1, "max": 3, "parts": parts}))
    (wheel, unsized) = causes(refused)
    assert wheel == ("spec.parts[1]", "FieldValueInvalid", 'Invalid value: "object": a part is named p-…')
    # a missing field read without has() fails the rule's evaluation: a cause too
    assert unsized[:2] == ("spec.parts[2]", "FieldValueInvalid")
    assert unsized[2].startswith('Invalid value: "object": rule evaluation error: ') and "size" in unsized[2]


def test_a_transition_rule_is_checked_on_updates_only_and_problems_already_stored_are_tolerated(
    emu: KubeEmulator,
) -> None:
    emu.create(gadget({"min": 1, "max": 5}))  # oldSelf: no old object, the rule is not evaluated
    with pytest.raises(ApiError) as shrunk:
        emu.patch("gadgets.example.dev", "g", {"spec": {"max": 4}}, namespace="default")
    assert causes(shrunk) == [("spec", "FieldValueInvalid", 'Invalid value: "object": max may only grow')]
    emu.patch("gadgets.example.dev", "g", {"spec": {"max": 6}}, namespace="default")
    assert emu.get("gadgets.example.dev", "g", "default")["spec"]["max"] == 6  # type: ignore[index]


def test_after_a_type_error_the_rules_are_not_checked_and_the_server_says_so(emu: KubeEmulator) -> None:
    with pytest.raises(ApiError) as refused:
        emu.create(gadget({"min": "one", "max": 0}))
    assert [cause[0] for cause in causes(refused)] == ["<nil>", "spec.min"]
    with pytest.raises(ApiError) as not_in_enum:
        emu.create(gadget({"min": 5, "max": 0, "color": "green"}))
    assert [cause[0] for cause in causes(not_in_enum)] == ["<nil>", "spec.color"]
    with pytest.raises(ApiError) as too_long:  # other schema errors leave the rules checked
        emu.create(gadget({"min": 5, "max": 0, "color": "red", "owner": "someone"}))
    assert [cause[:2] for cause in causes(too_long)] == [
        ("spec.max", "FieldValueInvalid"),
        ("spec.owner", "FieldValueTooLong"),
    ]
    assert causes(refused)[0][2] == (
        'Invalid value: "null": some validation rules were not checked because the object was invalid; '
        "correct the existing errors to complete validation"
    )


def test_a_crd_whose_rule_does_not_compile_is_refused() -> None:
    emu = KubeEmulator()
    broken = yaml.safe_load(yaml.safe_dump(CRD).replace("self.min >= 0", "self.min >="))
    with pytest.raises(ApiError) as refused:
        emu.create(broken)
    (field, reason, message), *_ = causes(refused)
    assert field == "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[3].rule"
    assert reason == "FieldValueInvalid" and "compilation failed" in message


def test_the_scalingtarget_crd_rules_compile_and_only_they_refuse_what_the_service_would() -> None:
    """Each refused target is admitted by the CRD without its rules (what it was before issue 39)."""
    crd = yaml.safe_load((MANIFESTS / "crd.yaml").read_text())
    bad = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 3,
        "maxReplicas": 2,
        "metrics": [
            {"type": "Resource", "resource": {"name": "gpu", "target": {"type": "Value", "value": "1"}}},
            {"type": "Object", "object": {"metric": {"name": "m"}, "query": "q", "target": {"type": "Value"}}},
            {
                "type": "External",
                "external": {
                    "metric": {"name": "m"},
                    "query": "q",
                    "target": {"type": "AverageValue", "averageValue": "1.5 GB"},
                },
            },
        ],
    }
    target = {"apiVersion": "autoscaler.dev/v1alpha1", "kind": "ScalingTarget", "metadata": {"name": "t"}, "spec": bad}
    with_rules = KubeEmulator()
    with_rules.create(crd)
    with pytest.raises(ApiError) as refused:
        with_rules.create(target)
    assert [cause[0] for cause in causes(refused)] == [
        "spec.maxReplicas",
        "spec.metrics[0].resource.query",
        "spec.metrics[0].resource.target.type",
        "spec.metrics[1].object.target.value",
        "spec.metrics[2].external.target.averageValue",
    ]
    without_rules = KubeEmulator()
    without_rules.create(
        yaml.safe_load(yaml.safe_dump(crd).replace("x-kubernetes-validations", "x-kubernetes-ignored"))
    )
    without_rules.create(target)
