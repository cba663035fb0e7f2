"""The VPA pin patch: quantity spelling and the whole containerPolicies list (A21, step 8)."""

from autoscaler.core.hvpa.vpa_patch import merge_patch, quantity_text, user_policies
from tests.core.hvpa.builders import q, target_spec


def test_quantity_spelling() -> None:
    assert [quantity_text("cpu", q(t)) for t in ("1.5", "2", "0.25", "1334m")] == ["1500m", "2", "250m", "1334m"]
    assert [quantity_text("memory", q(t)) for t in ("6.5Gi", "4Gi", "1229Mi")] == ["6656Mi", "4Gi", "1229Mi"]
    assert quantity_text("memory", q("2717028189")) == "2717028189"  # whole bytes when not a binary unit


def test_user_policies_repeat_only_what_the_user_wrote() -> None:
    spec = target_spec(
        "  containers:\n  - {name: main, minAllowed: {cpu: 100m}}\n"
        '  - {name: sidecar, mode: "Off", controlledResources: [memory]}\n'
    )
    assert spec.hvpa is not None
    assert user_policies(spec.hvpa) == [
        {"containerName": "main", "minAllowed": {"cpu": "100m"}},
        {"containerName": "sidecar", "mode": "Off", "controlledResources": ["memory"]},
    ]


def test_pins_merge_into_the_observed_list() -> None:
    spec = target_spec()
    assert spec.hvpa is not None
    observed = (
        {"containerName": "*", "mode": "Off"},
        {"containerName": "main", "minAllowed": {"cpu": "1", "memory": "1Gi"}, "extra": {"kept": True}},
    )
    patch = merge_patch(spec.hvpa, {"main": {"cpu": q("2")}, "new": {"memory": q("1Gi")}}, observed, "17")
    assert patch == {
        "metadata": {"resourceVersion": "17"},
        "spec": {
            "resourcePolicy": {
                "containerPolicies": [
                    {"containerName": "*", "mode": "Off"},
                    {
                        "containerName": "main",
                        "minAllowed": {"cpu": "2", "memory": "1Gi"},
                        "extra": {"kept": True},
                        "maxAllowed": {"cpu": "2"},
                    },
                    {"containerName": "new", "minAllowed": {"memory": "1Gi"}, "maxAllowed": {"memory": "1Gi"}},
                ]
            }
        },
    }
