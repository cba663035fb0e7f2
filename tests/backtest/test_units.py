"""Pure parts of the backtest: the grid, kube-state-metrics facts into pods, limit details,
the progress bar."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from autoscaler.backtest.history import Grid, HistoryClient, Matrix
from autoscaler.backtest.progress import Progress
from autoscaler.backtest.report import ReportBuilder
from autoscaler.backtest.workload import WorkloadHistory, owned_pods_query, restrict_to_pods, workload_queries
from autoscaler.core.observation import ConditionStatus, PodPhase
from autoscaler.core.spec import CrossVersionObjectReference
from autoscaler.prometheus.results import RangeResult, RangeSeries
from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario
from autoscaler.values.yaml_files import load_yaml_file

NOW = 1_715_072_400.0  # 2024-05-07T09:00:00Z
SCENARIOS = Path(__file__).resolve().parents[2] / "config" / "scenarios"


def test_grid_in_milliseconds() -> None:
    grid = Grid.between(0.1, 1.0, 0.3)  # float steps that would drift: 0.1, 0.4, 0.7, 1.0
    assert list(grid.times()) == [100, 400, 700, 1000]
    assert [(c.start_ms, c.count) for c in grid.chunks(3)] == [(100, 3), (1000, 1)]
    assert grid.from_time(700) == Grid(700, 300, 2)
    assert Grid.between(0, 59, 15).count == 4  # the last sync at or before --to


def test_queries_follow_ownership_and_only_the_workloads_pods() -> None:
    ref = CrossVersionObjectReference("Deployment", "web", "apps/v1")
    pods = owned_pods_query("shop", ref)
    assert 'kube_pod_owner{namespace="shop", owner_kind="Deployment", owner_name="web"}' in pods
    assert 'kube_replicaset_owner{namespace="shop", owner_kind="Deployment", owner_name="web"}' in pods
    queries = workload_queries("shop", ref)
    assert queries.status_replicas == 'max(kube_deployment_status_replicas{namespace="shop", deployment="web"})'
    assert queries.ready.endswith(f"and on (pod) {pods}")
    assert restrict_to_pods("q", "P", "pod") == "(q) and on (pod) (P)"
    assert restrict_to_pods("q", "P", "kubernetes_pod") == (
        '(q) and on (kubernetes_pod) (label_replace(P, "kubernetes_pod", "$1", "pod", "(.*)"))'
    )
    rollout = CrossVersionObjectReference("Rollout", "web")
    custom = workload_queries("shop", rollout, pods_query='kube_pod_labels{x="1"}', replicas_query="my_replicas")
    assert custom.pods == 'max by (pod) (kube_pod_labels{x="1"})' and custom.status_replicas == "my_replicas"
    assert workload_queries("shop", CrossVersionObjectReference("Rollout", "web")).status_replicas is None


def matrix(*series: tuple[dict[str, str], list[tuple[float, str]]]) -> Matrix:
    result = Matrix(0)
    result.add(RangeResult(tuple(RangeSeries(labels, tuple(points)) for labels, points in series)))
    return result


def test_pods_from_kube_state_metrics_facts() -> None:
    queries = workload_queries("shop", CrossVersionObjectReference("Deployment", "web"))
    history = HistoryClient(None)  # type: ignore[arg-type]  # nothing is fetched here
    at = [(100.0, "1"), (115.0, "1")]
    history.use(
        Grid(100_000, 15_000, 2),
        {
            queries.pods: matrix(({"pod": "p1"}, at), ({"pod": "p2"}, at), ({"pod": "p3"}, at[1:])),
            queries.phase: matrix(({"pod": "p1", "phase": "Running"}, at), ({"pod": "p2", "phase": "Pending"}, at)),
            queries.ready: matrix(
                ({"pod": "p1", "condition": "false"}, at[:1]),
                ({"pod": "p1", "condition": "true"}, at[1:]),
                ({"pod": "p2", "condition": "false"}, at),
            ),
            queries.ready_time: matrix(({"pod": "p3"}, [(115.0, "90")])),
            queries.start_time: matrix(({"pod": "p1"}, [(100.0, "50"), (115.0, "50")])),
            queries.deletion: matrix(({"pod": "p2"}, at[1:])),
            queries.requests: matrix(
                ({"pod": "p1", "container": "app", "resource": "cpu", "unit": "core"}, at),
                ({"pod": "p1", "container": "app", "resource": "nvidia_com_gpu", "unit": "integer"}, at),
                ({"pod": "p1", "container": "app", "resource": "memory", "unit": "byte"}, [(100.0, "1073741824")]),
            ),
            queries.status_replicas or "": matrix(({}, [(100.0, "2"), (115.0, "3")])),
        },
    )
    workload = WorkloadHistory(queries, ["nvidia.com/gpu"], "Deployment shop/web")
    names = workload.pod_names(history, 100_000)
    first = workload.at(history, 100_000, names, {"p1": {"app", "sidecar", ""}})
    assert names == ["p1", "p2"] and first.replicas == 2 and first.spec_replicas is None
    p1, p2 = first.pods
    assert (p1.phase, p1.ready, p1.ready_since, p1.started_at) == (PodPhase.RUNNING, ConditionStatus.FALSE, 50, 50)
    assert [(c.name, dict(c.requests)) for c in p1.containers] == [
        ("app", {"cpu": 1000, "nvidia.com/gpu": 1000, "memory": 1073741824000}),
        ("sidecar", {}),
    ]
    assert (p2.phase, p2.ready, p2.deleting) == (PodPhase.PENDING, ConditionStatus.FALSE, False)
    assert p2.started_at is not None and p2.started_at < 100 - 1e9  # no start time: long ago
    second = workload.at(history, 115_000, workload.pod_names(history, 115_000), {})
    p1, p2, p3 = second.pods
    assert p1.ready is ConditionStatus.TRUE and p1.ready_since == 115  # seen becoming ready at this sync
    assert p2.deleting and p2.ready_since == p2.started_at
    assert p3.phase is PodPhase.RUNNING and p3.ready is ConditionStatus.TRUE and p3.ready_since == 90  # ready_time
    assert p3.containers == ()
    notes = "\n".join(workload.notes("Deployment shop/web"))
    assert "kube_pod_status_phase: absent, pods assumed Running for 1 of 5 pod-syncs" in notes
    assert "kube_pod_status_ready: absent, pods assumed Ready for 1 of 5 pod-syncs" in notes


def test_limit_details_name_the_policy_or_window() -> None:
    scenario = parse_scenario(load_yaml_file(str(SCENARIOS / "hpa-docs-scale-down-policies.yaml")))
    builder = ReportBuilder("docs", "x.yaml", "ns", "t", scenario.spec, 0, 600, 30)
    for result in run_scenario(scenario):
        builder.add(result.at, result.decision, None)
    report = builder.build([])
    assert {key for key in report.limits} == {("ScaleDownLimit", "4 pods per 60s"), ("ScaleDownLimit", "10% per 60s")}
    legacy = parse_scenario(load_yaml_file(str(SCENARIOS / "quickstart.yaml")))
    builder = ReportBuilder("q", "q.yaml", "ns", "t", legacy.spec, 0, 195, 15)
    for result in run_scenario(legacy):
        builder.add(result.at, result.decision, 5)
    report = builder.build(["a note"])
    assert ("ScaleDownStabilized", "120s window") in report.limits
    assert report.cost.real_covered == 5 * 15 * report.syncs and report.notes == ["a note"]


def test_progress_bar_only_when_asked_or_on_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(4, stream, enabled=True, delay=0, interval=0)
    for done in range(1, 5):
        progress.update(done, NOW + done * 15)
    progress.finish()
    text = stream.getvalue()
    assert "[###############...............]  50%  2/4 syncs  at 2024-05-07T09:00:30Z" in text
    assert "100%  4/4 syncs" in text and text.endswith("\n")
    quiet = io.StringIO()
    Progress(4, quiet).update(4, NOW)  # a StringIO is not a terminal
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("fraction", [0.0004, 0.4564, 0.9994, 0.5])
def test_the_first_bucket_starts_at_from_whatever_its_milliseconds(fraction: float) -> None:
    # --from -10m is now minus 600 s, with sub-millisecond digits; the sync grid rounds it to the millisecond.
    start = 1_715_072_400 + fraction
    scenario = parse_scenario(load_yaml_file(str(SCENARIOS / "quickstart.yaml")))
    grid = Grid.between(start, start + 600, 15)
    builder = ReportBuilder("q", "q.yaml", "ns", "t", scenario.spec, start, start + 600, 15)
    results = run_scenario(scenario)
    for t_ms, result in zip(grid.times(), results, strict=False):
        builder.add(t_ms / 1000, result.decision, None)
    report = builder.build([])
    assert report.buckets[0].start == start
    assert all(b.start >= start for b in report.buckets)
