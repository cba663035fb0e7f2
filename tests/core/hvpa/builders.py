"""Builders that keep the HVPA tests short: specs from YAML, pods, VPA statuses, one-call decisions."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import yaml

from autoscaler.core.decision import Decision
from autoscaler.core.hvpa.decision import HvpaDecision, HvpaObservation, HvpaState, VpaObservation, decide_hvpa
from autoscaler.core.hvpa.vpa import ContainerRecommendation, VpaCondition, VpaStatus
from autoscaler.core.observation import ContainerInfo, PodInfo
from autoscaler.core.spec import TargetSpec
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.values.quantity import Quantity

GI = 2**30
MI = 2**20

# HVPA-EP-0001's main example (the document's kube-apiserver table).
FIVE_INTERVALS = """
    - {maxReplicas: 1, maxResources: {cpu: 500m, memory: 2Gi}}
    - {maxReplicas: 2, maxResources: {cpu: 1, memory: 4Gi}}
    - {maxReplicas: 3, maxResources: {cpu: 2, memory: 8Gi}}
    - {maxReplicas: 4, maxResources: {cpu: 4, memory: 16Gi}}
    - {maxReplicas: 5, maxResources: {cpu: 8, memory: 32Gi}}
"""


def q(text: str) -> Fraction:
    return Quantity.parse(text).value


def target_spec(hvpa: str = "", *, min_replicas: int = 1, max_replicas: int = 5, extra: str = "") -> TargetSpec:
    """A target spec whose hvpa section is ``hvpa`` (YAML, indented under ``hvpa:``); the five intervals
    when it does not give scalingIntervals."""
    body = hvpa if "  scalingIntervals:" in hvpa else f"  scalingIntervals:\n{FIVE_INTERVALS}\n{hvpa}"
    text = (
        f"scaleTargetRef: {{kind: Deployment, name: kube-apiserver}}\nminReplicas: {min_replicas}\n"
        f"maxReplicas: {max_replicas}\n{extra}\nhvpa:\n{body}"
    )
    return parse_target_spec(yaml.safe_load(text))


def pods(
    count: int,
    requests: Mapping[str, str],
    *,
    container: str = "main",
    limits: Mapping[str, str] | None = None,
    others: tuple[ContainerInfo, ...] = (),
) -> list[PodInfo]:
    milli = {r: Quantity.parse(v).milli_value() for r, v in requests.items()}
    limit_milli = {r: Quantity.parse(v).milli_value() for r, v in (limits or {}).items()}
    return [
        PodInfo(f"p{i}", containers=(ContainerInfo(container, milli, limits=limit_milli), *others))
        for i in range(count)
    ]


PROVIDED = (VpaCondition("RecommendationProvided", "True"),)


def vpa_status(
    per_container: Mapping[str, Mapping[str, str]],
    *,
    uncapped: Mapping[str, Mapping[str, str]] | None = None,
    conditions: tuple[VpaCondition, ...] = PROVIDED,
) -> VpaStatus:
    entries = []
    for name, target in per_container.items():
        raw_uncapped = (uncapped or {}).get(name)
        entries.append(
            ContainerRecommendation(
                name,
                {r: q(v) for r, v in target.items()},
                {r: q(v) for r, v in raw_uncapped.items()} if raw_uncapped is not None else None,
            )
        )
    return VpaStatus(tuple(entries), conditions)


def decide(
    spec: TargetSpec,
    replicas: int,
    pod_list: list[PodInfo],
    *,
    vpa: VpaStatus | None = None,
    hpa: Decision | None = None,
    state: HvpaState | None = None,
    now: float = 1000.0,
    policies: tuple[Mapping[str, Any], ...] | None = None,
    clock: Fraction | float | None = None,
    resource_version: str | None = None,
) -> HvpaDecision:
    observation = HvpaObservation(replicas, pod_list, VpaObservation(vpa, policies, resource_version), clock=clock)
    return decide_hvpa(spec, observation, hpa, state or HvpaState(), now)


def texts(amounts: Mapping[str, Mapping[str, Fraction]]) -> dict[str, dict[str, str]]:
    from autoscaler.core.hvpa.vpa_patch import quantity_text

    return {c: {r: quantity_text(r, v) for r, v in values.items()} for c, values in amounts.items()}


# Spec fragments the decide_hvpa tests share (test_decision*.py): the VPA as the only source, no minChange
# gate, the design document's base and overlap, and one CPU-controlled container.
VPA_ONLY = "  sources: [vpa]\n"
NO_MIN_CHANGE = (
    "  scaleUp: {minChange: {cpu: {value: 0}, memory: {value: 0}}}\n"
    "  scaleDown: {minChange: {cpu: {value: 0}, memory: {value: 0}}}\n"
)
DESIGN = (
    "  baseResourcesPerReplica: {cpu: {value: 50m, percentage: 5}, memory: {value: 200M, percentage: 10}}\n"
    "  scalingIntervalsOverlap: {cpu: {value: 250m, percentage: 30}, memory: {value: 1.5Gi, percentage: 30}}\n"
)
CPU_ONLY = "  containers: [{name: main, controlledResources: [cpu]}]\n"
