"""The hvpa section: EP-0001's names, defaults, and every validation rule with its path (step 1, A19, A23–A28)."""

from fractions import Fraction
from typing import Any

import pytest
import yaml

from autoscaler.core.hvpa.spec import (
    ContainerMode,
    ControlledValues,
    Extrapolation,
    Source,
    UpdateMode,
)
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.values.fields import SpecError
from tests.core.hvpa.builders import GI, q

BASE = "scaleTargetRef: {kind: Deployment, name: kube-apiserver}\nminReplicas: 1\nmaxReplicas: 5\n"


def errors_of(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_target_spec(yaml.safe_load(BASE + text))
    return [str(e) for e in info.value.errors]


def parse(text: str) -> Any:
    spec = parse_target_spec(yaml.safe_load(BASE + text))
    assert spec.hvpa is not None
    return spec.hvpa


def test_the_design_section_example_with_its_misspelling_fixed() -> None:
    hvpa = parse("""
hvpa:
  baseResourcesPerReplica:
    cpu: {value: 50m, percentage: 5}
    memory: {value: 200M, percentage: 10}
  scalingIntervals:
  - {maxReplicas: 1, maxResources: {cpu: 500m, memory: 2Gi}}
  - {maxReplicas: 2, maxResources: {cpu: 1, memory: 4Gi}}
  - {maxReplicas: 3, maxResources: {cpu: 2, memory: 8Gi}}
  - {maxReplicas: 4, maxResources: {cpu: 4, memory: 16Gi}}
  - {maxReplicas: 5, maxResources: {cpu: 8, memory: 32Gi}, effectiveIntervalExtrapolation: linear}
  scalingIntervalsOverlap:
    cpu: {value: 250m, percentage: 30}
    memory: {value: 1.5Gi, percentage: 30}
  limitsRequestsGapScaleParams:
    cpu: {percentage: 50}
  scaleUp:
    updatePolicy: {updateMode: Auto}
    minChange: {cpu: {value: 100m, percentage: 10}}
    stabilizationDuration: 3m
  scaleDown:
    updatePolicy: {updateMode: MaintenanceWindow}
    stabilizationDuration: 1h30m
  maintenanceTimeWindow: {begin: "220000+0100", end: "040000+0100"}
  vpa: kube-apiserver-vpa
  containers:
  - {name: main, minAllowed: {cpu: 100m}, maxAllowed: {cpu: 8, memory: 32Gi}}
  - {name: sidecar, mode: "Off"}
  sources: [vpa]
""")
    assert len(hvpa.scaling_intervals) == 5
    assert hvpa.scaling_intervals[0].max_resources == {"cpu": q("500m"), "memory": 2 * GI}
    assert hvpa.scaling_intervals[4].extrapolation is Extrapolation.LINEAR
    assert hvpa.base_resources_per_replica["memory"].value == 200_000_000
    assert hvpa.base_resources_per_replica["memory"].percentage == 10
    assert hvpa.scaling_intervals_overlap["memory"].value == q("1.5Gi")
    assert hvpa.limits_requests_gap_scale_params["cpu"].value is None
    assert hvpa.scale_up.stabilization_seconds == 180 and hvpa.scale_down.stabilization_seconds == 5400
    assert hvpa.scale_down.update_mode is UpdateMode.MAINTENANCE_WINDOW
    assert hvpa.maintenance_time_window is not None
    assert (hvpa.maintenance_time_window.begin, hvpa.maintenance_time_window.end) == (21 * 3600, 3 * 3600)
    assert hvpa.vpa == "kube-apiserver-vpa"
    assert hvpa.containers[1].mode is ContainerMode.OFF
    assert hvpa.sources == (Source.VPA,)
    assert hvpa.warnings == ()


def test_defaults() -> None:
    hvpa = parse("hvpa:\n  scalingIntervals: [{maxResources: {cpu: 1, memory: 1Gi}}]\n")
    assert hvpa.scaling_intervals[0].max_replicas is None  # the target's maxReplicas (A24)
    assert hvpa.scale_up.update_mode is UpdateMode.AUTO and hvpa.scale_up.stabilization_seconds == 0
    assert hvpa.scale_up.min_change == {}  # 200m / 200M at decision time (A17)
    assert hvpa.sources == (Source.HPA, Source.VPA)
    assert hvpa.vpa is None and hvpa.containers == () and hvpa.maintenance_time_window is None
    policy = hvpa.policy_for("anything")
    assert policy.mode is ContainerMode.AUTO and policy.controlled_resources == ("cpu", "memory")
    assert policy.controlled_values is ControlledValues.REQUESTS_AND_LIMITS


def test_wildcard_policy_applies_to_unlisted_containers() -> None:
    hvpa = parse(
        "hvpa:\n  scalingIntervals: [{maxResources: {cpu: 1, memory: 1Gi}}]\n  containers:\n"
        "  - {name: '*', controlledResources: [cpu], maxAllowed: {cpu: 2}}\n  - {name: main}\n"
    )
    assert hvpa.policy_for("main").controlled_resources == ("cpu", "memory")
    assert hvpa.policy_for("other").controlled_resources == ("cpu",)
    assert hvpa.policy_for("other").bound("max", "cpu") == 2


def test_misspellings_get_a_hint() -> None:
    # A23: the document's own yaml writes percentate; hvpa-v2 named the fields maxCpu and scaleIntervals.
    errors = errors_of("""
hvpa:
  scaleIntervals: []
  scalingIntervals:
  - {maxReplicas: 1, maxCpu: 1, maxResources: {cpu: 1, memroy: 1Gi}, effectiveIntervalExtrapolation: Linear}
  baseResourcesPerReplica:
    memory: {value: 200M, percentate: 10}
  scaleUp: {updatePolicy: {updateMode: auto}, minchange: {}}
  sources: [hpa, vap]
""")
    assert errors == [
        'spec.hvpa.scalingIntervals[0].maxResources.memroy: unknown field (did you mean "memory"?)',
        'spec.hvpa.scalingIntervals[0].effectiveIntervalExtrapolation: Unsupported value: "Linear": '
        'supported values: "linear", "horizontalOnly" (did you mean "linear"?)',
        'spec.hvpa.scalingIntervals[0].maxCpu: unknown field (did you mean "maxResources.cpu"? hvpa-v2 called it '
        "maxCpu; A23)",
        'spec.hvpa.baseResourcesPerReplica.memory.percentate: unknown field (did you mean "percentage"?)',
        'spec.hvpa.scaleUp.updatePolicy.updateMode: Unsupported value: "auto": supported values: "Auto", "Off", '
        '"MaintenanceWindow" (did you mean "Auto"?)',
        'spec.hvpa.scaleUp.minchange: unknown field (did you mean "minChange"?)',
        'spec.hvpa.sources[1]: Unsupported value: "vap": supported values: "hpa", "vpa" (did you mean "vpa"?)',
        'spec.hvpa.scaleIntervals: unknown field (did you mean "scalingIntervals"?)',
    ]


def test_max_replicas_rules() -> None:
    text = (
        BASE.replace("minReplicas: 1", "minReplicas: 2")
        + """
hvpa:
  scalingIntervals:
  - {maxReplicas: 1, maxResources: {cpu: 500m, memory: 2Gi}}
  - {maxReplicas: 3, maxResources: {cpu: 1, memory: 4Gi}}
  - {maxReplicas: 3, maxResources: {cpu: 2, memory: 8Gi}}
  - {maxReplicas: 5, maxResources: {cpu: 4, memory: 16Gi}}
  - {maxResources: {cpu: 8, memory: 32Gi}}
"""
    )
    with pytest.raises(SpecError) as info:
        parse_target_spec(yaml.safe_load(text))
    assert [str(e) for e in info.value.errors] == [
        "spec.hvpa.scalingIntervals[0].maxReplicas: must be at least the target's minReplicas (2) (A28)",
        "spec.hvpa.scalingIntervals[2].maxReplicas: must be greater than scalingIntervals[1].maxReplicas (3) (A28)",
        "spec.hvpa.scalingIntervals[4].maxReplicas: must be greater than scalingIntervals[3].maxReplicas (5) "
        "(it defaults to the target's maxReplicas, 5) (A28)",
    ]


def test_max_totals_must_grow_and_max_resources_need_a_default() -> None:
    errors = errors_of("""
hvpa:
  scalingIntervals:
  - {maxReplicas: 1, maxResources: {cpu: 500m, memory: 2Gi}}
  - {maxReplicas: 3, maxResources: {cpu: 100m}}
  containers: [{name: main}, {name: side, controlledResources: [cpu], maxAllowed: {cpu: 1}}]
""")
    assert errors == [
        "spec.hvpa.scalingIntervals[1].maxResources.cpu: must make the maximum total grow: 3 × 100m = 300m is not "
        "above 500m, the maximum total below it (A28)",
        "spec.hvpa.scalingIntervals[1].maxResources.memory: Required value: maxResources.memory is not set and "
        'container "main" has no maxAllowed.memory to default to (A24)',
    ]
    # Without containers, the default policy has no maxAllowed either.
    assert errors_of("hvpa:\n  scalingIntervals: [{maxReplicas: 2, maxResources: {cpu: 1}}]\n") == [
        "spec.hvpa.scalingIntervals[0].maxResources.memory: Required value: maxResources.memory is not set and "
        "the default container policy has no maxAllowed.memory to default to (A24)"
    ]
    # A container that controls only cpu needs no memory; maxAllowed fills the gap.
    parse(
        "hvpa:\n  scalingIntervals: [{maxReplicas: 2, maxResources: {cpu: 1}}, {maxReplicas: 4}]\n"
        "  containers: [{name: main, controlledResources: [cpu], maxAllowed: {cpu: 2}}]\n"
    )


def test_cross_field_rules() -> None:
    errors = errors_of("""
minReplicas: 0
metrics:
- type: External
  external: {metric: {name: q}, target: {type: Value, value: "1"}, query: q}
hvpa:
  scalingIntervals: [{maxResources: {cpu: 1, memory: 1Gi}}]
  scaleUp:
    updatePolicy: {updateMode: MaintenanceWindow}
    minChange: {replicas: {value: 1}, cpu: {}}
    stabilizationDuration: -1m
  scaleDown: {stabilizationDuration: 3d}
""")
    text = "\n".join(errors)
    assert "spec.hvpa.scaleUp.minChange.cpu: Required value: set value, percentage or both" in text
    assert "spec.hvpa.scaleUp.minChange.replicas: Forbidden: not supported" in text and "A17" in text
    assert "spec.hvpa.scaleUp.stabilizationDuration: must not be negative (A27)" in text
    assert 'spec.hvpa.scaleDown.stabilizationDuration: unknown unit "d" in duration "3d"' in text
    assert (
        "spec.hvpa.scaleUp.updatePolicy.updateMode: Required value: updateMode MaintenanceWindow needs "
        "spec.hvpa.maintenanceTimeWindow (A19)"
    ) in text
    assert "spec.minReplicas: must be at least 1 with hvpa (HVPA never scales to zero; A8)" in text


def test_maintenance_window_format() -> None:
    errors = errors_of(
        "hvpa:\n  scalingIntervals: [{maxResources: {cpu: 1, memory: 1Gi}}]\n"
        "  maintenanceTimeWindow: {begin: '22:00:00+01:00', end: 040000Z, start: x}\n"
    )
    assert errors[0].startswith("spec.hvpa.maintenanceTimeWindow.begin: must be a time of day as HHMMSS±hhmm")
    assert errors[1].startswith("spec.hvpa.maintenanceTimeWindow.end: must be a time of day as HHMMSS±hhmm")
    assert errors[2] == "spec.hvpa.maintenanceTimeWindow.start: unknown field"


def test_container_rules() -> None:
    errors = errors_of("""
hvpa:
  scalingIntervals: [{maxResources: {cpu: 1, memory: 1Gi}}]
  containers:
  - {name: Main_1, mode: Auto, controlledResources: [cpu, mem]}
  - {name: main, minAllowed: {cpu: 2}, maxAllowed: {cpu: 1}, controlledValues: RequestOnly}
  - {name: ok}
  - {name: ok}
  vpa: My_VPA
  sources: []
""")
    assert errors == [
        "spec.hvpa.vpa: must be the name of a VerticalPodAutoscaler (a DNS-1123 subdomain)",
        'spec.hvpa.containers[0].name: must be a container name (a DNS-1123 label) or "*" for every other container',
        'spec.hvpa.containers[0].controlledResources[1]: Unsupported value: "mem": supported values: "cpu", '
        '"memory" (did you mean "memory"?)',
        'spec.hvpa.containers[1].controlledValues: Unsupported value: "RequestOnly": supported values: '
        '"RequestsAndLimits", "RequestsOnly" (did you mean "RequestsOnly"?)',
        "spec.hvpa.containers[1].minAllowed.cpu: must not be greater than maxAllowed.cpu (1)",
        'spec.hvpa.containers[3].name: Duplicate value: "ok"',
        'spec.hvpa.sources: Required value: list "hpa", "vpa" or both',
    ]


def test_percentages_and_quantities() -> None:
    errors = errors_of("""
hvpa:
  scalingIntervals: [{maxResources: {cpu: 0, memory: 1Gi}}]
  scalingIntervalsOverlap: {cpu: {percentage: 130}}
  limitsRequestsGapScaleParams: {cpu: {value: -1}, memory: {percentage: 300}}
""")
    assert errors == [
        "spec.hvpa.scalingIntervals[0].maxResources.cpu: must be positive",
        "spec.hvpa.scalingIntervalsOverlap.cpu.percentage: must be between 0 and 100",
        "spec.hvpa.limitsRequestsGapScaleParams.cpu.value: must be greater than or equal to 0",
    ]


def test_warnings_for_valid_but_suspicious_settings() -> None:
    hvpa = parse("""
hvpa:
  scalingIntervals:
  - {maxReplicas: 4, maxResources: {cpu: 1, memory: 1Gi}}
  - {maxReplicas: 8, maxResources: {cpu: 2, memory: 2Gi}}
  - {maxReplicas: 9, maxResources: {cpu: 4, memory: 4Gi}}
  maintenanceTimeWindow: {begin: "030000+0000", end: "030000+0000"}
""")
    assert hvpa.warnings == (
        "spec.hvpa.maintenanceTimeWindow: begin and end are the same second, so the window is one second long, "
        "not all day (A19)",
        "spec.hvpa.scalingIntervals[1].maxReplicas: counts above the target's maxReplicas (5) are never used (A25)",
        "spec.hvpa.scalingIntervals[2]: starts above the target's maxReplicas (5), so it is never used (A25)",
    )


def test_no_hvpa_section_leaves_the_spec_alone() -> None:
    assert parse_target_spec(yaml.safe_load(BASE)).hvpa is None
    assert Fraction(1) == 1


def test_the_quick_start_in_the_docs_is_valid() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "hvpa.md").read_text()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    spec = parse_target_spec(yaml.safe_load(block))
    assert spec.hvpa is not None and len(spec.hvpa.scaling_intervals) == 5 and spec.hvpa.warnings == ()
