"""``--compare``: two specs over the same history; the second one's replica count departs from what
really ran, so its pods and their load are modelled (docs/backtest.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.backtest.compare import comparison_json, render_comparison
from autoscaler.backtest.report import report_json
from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data as hd
from tests.backtest.helpers import as_json, replay, web_options, write_target

pytestmark = pytest.mark.prometheus

CAPPED = hd.spec_with(maxReplicas=6, behavior={"scaleDown": {"stabilizationWindowSeconds": 0}})


async def test_two_specs_side_by_side(history_prometheus: PrometheusSandbox, tmp_path: Path) -> None:
    web = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    capped = write_target(tmp_path, "capped.yaml", CAPPED)
    alone, alone_steps, _ = await replay(history_prometheus, [web], web_options())
    both, steps, _ = await replay(history_prometheus, [web, capped], web_options())
    # The first spec's replay is untouched by the second's.
    assert as_json(steps[str(web)]) == as_json(alone_steps[str(web)])
    assert report_json(both.runs[0].report) == report_json(alone.runs[0].report)

    first, second = (run.report for run in both.runs)
    assert second.high == 6 and first.high == 10
    assert ("TooManyReplicas", "maxReplicas 6") in second.limits
    assert not any(reason == "ScaleDownStabilized" for reason, _ in second.limits)
    assert second.cost.replay < first.cost.replay
    assert both.divergence.syncs == 23 and both.divergence.largest_gap == 6  # 10 against 4

    document = comparison_json([first, second], both.divergence)
    assert [run["label"] for run in document["runs"]] == [str(web), str(capped)]
    assert document["difference"]["syncsWithDifferentReplicas"] == both.divergence.syncs
    assert document["difference"]["podSeconds"] == second.cost.replay - first.cost.replay

    text = render_comparison([first, second], both.divergence)
    assert str(web) in text and str(capped) in text
    assert "TooManyReplicas (maxReplicas 6)" in text
    assert f"The replica counts differ at {both.divergence.syncs:,} of {hd.SYNCS:,} syncs" in text


async def test_modelled_pods_carry_the_real_load(history_prometheus: PrometheusSandbox, tmp_path: Path) -> None:
    """Where the capped spec runs fewer pods than really ran, they carry the same total CPU and rps."""
    web = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    capped = write_target(tmp_path, "capped.yaml", CAPPED)
    _, steps, reals = await replay(history_prometheus, [web, capped], web_options())
    syncs, _ = hd.web_history()
    checked = 0
    for sync, result, real in zip(syncs, steps[str(capped)], reals, strict=True):
        observation = result.observation
        replicas = observation.scale.spec_replicas
        live = [p for p in real.pods if not p.deleting]
        if replicas == len(live):
            continue
        cpu, rps = observation.readings[0], observation.readings[1]
        cpu_total = sum(v or 0 for usage in getattr(cpu, "pods", {}).values() for v in usage.containers.values())
        rps_total = sum(s.value for s in getattr(rps, "pods", {}).values())
        assert len([p for p in observation.pods if not p.deleting]) == replicas
        # Each value is rounded to the milli: the totals are kept within half a milli per pod.
        assert abs(cpu_total - sum(sync.cpu.values())) <= replicas
        assert abs(rps_total - sum(sync.rps.values())) <= replicas
        checked += 1
    assert checked > 10
