"""Range splitting under Prometheus' points limit, and missing series handled as documented
(docs/backtest.md, "What history is read"), against the real Prometheus."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.backtest.history import MAX_POINTS_PER_QUERY, FetchStats, Grid, fetch_matrix
from autoscaler.backtest.replay import BacktestError
from autoscaler.prometheus import PrometheusBadQuery, PrometheusClient, PrometheusSettings
from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data as hd
from tests.backtest.helpers import as_json, replay, web_options, write_target

pytestmark = pytest.mark.prometheus


async def test_ranges_are_split_below_the_points_limit(history_prometheus: PrometheusSandbox) -> None:
    settings = PrometheusSettings(url=history_prometheus.url, timeout_seconds=30)
    grid = Grid.between(hd.T0, hd.T0 + MAX_POINTS_PER_QUERY + 99, 1.0)  # 11,100 points at 1 s
    async with PrometheusClient(settings) as client:
        with pytest.raises(PrometheusBadQuery, match="11,000 points"):
            await client.query_range("vector(1)", grid.start_ms / 1000, grid.end_ms / 1000, 1.0)
        stats = FetchStats()
        matrix = await fetch_matrix(client, "vector(1)", grid, stats=stats)
    assert stats.range_queries == 2
    assert sorted(matrix.by_time) == list(grid.times())
    assert all(len(v) == 1 and v[0].value == "1" for v in matrix.by_time.values())


def lean_spec(**changes: object) -> dict[str, object]:
    spec = {
        **hd.WEB_SPEC,
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "lean"},
        "minReplicas": 1,
    }
    spec.update(changes)
    return spec


async def test_missing_series_are_assumed_and_reported(history_prometheus: PrometheusSandbox, tmp_path: Path) -> None:
    path = write_target(tmp_path, "lean.yaml", lean_spec(), namespace="bare", name="lean")
    options = web_options(end=hd.T0 + (hd.LEAN_SYNCS - 1) * hd.STEP)
    result, steps, reals = await replay(history_prometheus, [path], options)
    report = result.runs[0].report
    # Pods found through ownership alone, assumed Running, Ready and long started; no requests.
    first = reals[0]
    assert [p.name for p in first.pods] == ["lean-1", "lean-2"]
    assert all(p.phase.value == "Running" and p.ready is not None and p.ready.value == "True" for p in first.pods)
    assert all(p.started_at is not None and p.started_at < hd.T0 - 1e9 for p in first.pods)
    assert first.replicas is None and first.spec_replicas is None
    # The replay starts from the pods it saw; CPU utilization fails as upstream fails it, rps decides.
    assert report.initial == 2
    cpu_error = steps[str(path)][0].decision.metrics[0].error
    assert cpu_error is not None and "missing request for cpu in container app of Pod lean-1" in cpu_error
    assert report.failures["cpu"].syncs == hd.LEAN_SYNCS
    assert report.high > 2  # 30 rps per pod against 10: scale-ups still happen with a metric failed
    notes = "\n".join(report.notes)
    for text in (
        "kube_pod_status_phase: absent, pods assumed Running",
        "kube_pod_status_ready: absent, pods assumed Ready",
        "kube_pod_start_time: absent, pods assumed started long before",
        "kube_pod_container_resource_requests: absent, requests unknown",
        "kube_deployment_status_replicas",
    ):
        assert text in notes
    assert not report.real_known and report.cost.change is None


async def test_a_workload_without_pods_or_replicas(history_prometheus: PrometheusSandbox, tmp_path: Path) -> None:
    spec = lean_spec(scaleTargetRef={"kind": "Deployment", "name": "ghost"})
    path = write_target(tmp_path, "ghost.yaml", spec, namespace="bare", name="ghost")
    options = web_options(end=hd.T0 + 60)
    with pytest.raises(BacktestError, match="--initial-replicas") as raised:
        await replay(history_prometheus, [path], options)
    assert raised.value.exit_code == 2
    result, steps, _ = await replay(history_prometheus, [path], web_options(end=hd.T0 + 60, initial_replicas=2))
    report = result.runs[0].report
    assert "no pods of Deployment bare/ghost were found at any sync" in "\n".join(report.notes)
    assert report.final == 2 and all(not s.decision.scale for s in steps[str(path)])
    assert report.undecided.syncs == 5  # no metric could be computed: no decision, never a scale-down


async def test_other_workloads_in_the_namespace_never_leak_in(
    history_prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    path = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    _, steps, reals = await replay(history_prometheus, [path], web_options(end=hd.T0 + 60))
    assert all(not p.name.startswith("other") for real in reals for p in real.pods)
    for result in steps[str(path)]:
        for reading in result.observation.readings:
            assert not any(name.startswith("other") for name in getattr(reading, "pods", {}))


async def test_pod_dependent_queries_and_custom_pod_lists(
    history_prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    """A query using <<pods>> is fetched when first asked (its text changes with the pods); a
    --pods-query replaces ownership. Neither changes a decision."""
    web = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    _, expected, _ = await replay(history_prometheus, [web], web_options())
    metrics = [dict(m) for m in hd.WEB_SPEC["metrics"]]
    by_pod_names = 'sum by (namespace, pod) (http_rps{namespace="shop", pod=~<<pods>>})'
    metrics[1] = {"type": "Pods", "pods": {**metrics[1]["pods"], "query": by_pod_names}}
    by_pods = write_target(tmp_path, "by-pods.yaml", hd.spec_with(metrics=metrics))
    pods_query = 'kube_pod_owner{namespace="shop", owner_name="web-5d9f"}'
    result, steps, _ = await replay(history_prometheus, [by_pods], web_options(pods_query=pods_query, chunk_points=10))
    assert as_json(steps[str(by_pods)]) == as_json(expected[str(web)])
    # One range query per change of the pod set (plus the chunk's own queries).
    assert result.stats.range_queries > 4 * 10
