"""A backtest of a target with ``hvpa``: HVPA decides the replay's replicas and pod size, and the
requests it applies are what the simulated pods carry from the next sync on (docs/backtest.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data as hd
from tests.backtest.helpers import replay, web_options, write_target

pytestmark = pytest.mark.prometheus

# CPU only, 50 % of the request, 2 pods per 30 s up (hd.WEB_SPEC's behavior). Up to 3 pods of at most
# 1 CPU, then up to 12 of at most 2 CPU; any change is worth making.
HVPA_SPEC: dict[str, Any] = {
    **hd.WEB_SPEC,
    "metrics": [hd.WEB_SPEC["metrics"][0]],
    "hvpa": {
        "sources": ["hpa"],
        "scalingIntervals": [
            {"maxReplicas": 3, "maxResources": {"cpu": "1"}},
            {"maxReplicas": 12, "maxResources": {"cpu": "2"}},
        ],
        "scaleUp": {"minChange": {"cpu": {"value": 0}}},
        "scaleDown": {"minChange": {"cpu": {"value": 0}}},
        "containers": [{"name": "app", "controlledResources": ["cpu"]}],
    },
}


def requests_of(pods: Any) -> set[int | None]:
    return {c.requests.get("cpu") for p in pods for c in p.containers}


async def test_hvpa_decides_and_its_requests_are_the_pods_from_then_on(
    history_prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    path = write_target(tmp_path, "hvpa.yaml", HVPA_SPEC)
    result, steps, _ = await replay(history_prometheus, [path], web_options(keep_records=True))
    syncs = steps[str(path)]
    assert len(syncs) == hd.SYNCS and all(s.hvpa is not None for s in syncs)
    # The count set is HVPA's every time (the HPA engine's final count is only its source).
    assert all(s.decision.replicas == s.hvpa.replicas for s in syncs if s.hvpa is not None)
    # Sync 4: 1.2 CPU over 3 pods of 500m is 80 % → the HPA proposes 5 (its policy allows +2), a total of
    # 5 × 500m = 2.5 CPU, which 3 pods hold (MAX(3) = 3 CPU): 3 pods of 2.5 / 3 → 834m.
    fourth = syncs[4]
    assert fourth.hvpa is not None and fourth.decision.normalization is not None
    assert fourth.decision.normalization.final == 5
    assert (fourth.decision.replicas, fourth.hvpa.requests["app"]["cpu"] * 1000) == (3, 834)
    assert requests_of(fourth.observation.pods) == {500}
    # Sync 5 sees pods of 834m: 1.8 CPU over 3 is 72 % → 5 again, 5 × 834m = 4.17 CPU > 3 CPU → 4 pods of 1043m.
    fifth = syncs[5]
    assert fifth.hvpa is not None
    assert requests_of(fifth.observation.pods) == {834}
    assert (fifth.decision.replicas, fifth.hvpa.requests["app"]["cpu"] * 1000) == (4, 1043)
    report = result.runs[0].report
    assert [(e.before, e.after) for e in report.events] == [
        (s.decision.current_replicas, s.decision.replicas) for s in syncs if s.decision.scale
    ]
    assert report.notes == []
    records = result.runs[0].records
    assert records is not None and records[4].hvpa is not None
    assert records[4].hvpa.requests[("app", "cpu")] == 0.834


async def test_the_vpa_source_is_said_to_be_missing(history_prometheus: PrometheusSandbox, tmp_path: Path) -> None:
    both = {**HVPA_SPEC, "hvpa": {**HVPA_SPEC["hvpa"], "sources": ["hpa", "vpa"]}}
    path = write_target(tmp_path, "hvpa.yaml", both)
    result, steps, _ = await replay(history_prometheus, [path], web_options())
    assert [note for note in result.runs[0].report.notes if "VPA source" in note] == [
        f"{path}: HVPA is replayed without the VPA source (Prometheus does not keep a VPA's recommendations): "
        "it decides from the HPA source alone"
    ]
    first = steps[str(path)][0].hvpa
    assert first is not None and "VPA source unavailable: no VPA status" in (
        first.sources.unavailable if first.sources else ()
    )
