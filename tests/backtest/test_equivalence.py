"""The proof: a backtest of a known history (loaded with promtool into a real Prometheus) makes
exactly the decisions ``simulate`` makes on the scenario built from the same numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario
from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data as hd
from tests.backtest.helpers import as_json, replay, web_options, write_target

pytestmark = pytest.mark.prometheus


async def test_backtest_makes_the_decisions_simulate_makes(
    history_prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    _, scenario = hd.web_history()
    expected = as_json(run_scenario(parse_scenario(scenario)))
    path = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    result, steps, _ = await replay(history_prometheus, [path], web_options())
    actual = as_json(steps[str(path)], origin=hd.T0)
    assert len(actual) == hd.SYNCS
    for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
        assert got == want, f"sync {index} differs"
    # The history is rich enough to mean something: limits, windows, unready, missing and ignored pods.
    assert {s["limitedBy"] for s in expected} >= {"ScaleUpLimit", "ScaleDownLimit", "ScaleDownStabilized"}
    cpu = [s["metrics"][0] for s in expected]
    rps = [s["metrics"][1] for s in expected]
    assert any(m["unreadyPods"] for m in cpu) and any(m["missingPods"] for m in rps)
    assert any(m["ignoredPods"] for m in cpu)
    report = result.runs[0].report
    assert [(e.before, e.after) for e in report.events] == [
        (s["currentReplicas"], s["replicas"]) for s in expected if s["scaled"]
    ]


async def test_chunks_and_split_ranges_change_nothing(history_prometheus: PrometheusSandbox, tmp_path: Path) -> None:
    path = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    whole, whole_steps, _ = await replay(history_prometheus, [path], web_options())
    # 7 syncs per chunk (6 chunks, the last one short), at most 3 points per range query.
    small, small_steps, _ = await replay(history_prometheus, [path], web_options(chunk_points=7, max_points=3))
    assert as_json(small_steps[str(path)]) == as_json(whole_steps[str(path)])
    assert small.stats.points == whole.stats.points
    assert small.stats.range_queries > 3 * whole.stats.range_queries
