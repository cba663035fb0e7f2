"""The demo's parts on their own: the curve, the time scale, the synthetic Prometheus read through the
service's own client and reader, and the counters fed to a real Prometheus."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from autoscaler.core.observation import ExternalReading, MetricFailure, ResourceReading
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.prometheus.client import PrometheusClient
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.reader import MetricsReader
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler_sandbox import MetricsExporter
from autoscaler_sandbox import demo_objects as objects
from autoscaler_sandbox.feeder import ExporterFeeder, continuous_origin
from autoscaler_sandbox.loadcurve import DEMO_CURVE, LoadCurve, Phase
from autoscaler_sandbox.promapi import SyntheticPrometheus
from autoscaler_sandbox.timeline import Timeline
from autoscaler_sandbox.timescale import TimeScale, clock_text
from autoscaler_sandbox.traffic import PodState
from autoscaler_sandbox.world import DemoWorld


def test_the_curve_rises_spikes_and_falls() -> None:
    curve = LoadCurve((Phase("a", 10, 100, 100), Phase("b", 20, 100, 300), Phase("c", 10, 50, 50)))
    assert curve.duration == 40
    assert [curve.load(t) for t in (-5, 0, 10, 20, 30, 35, 99)] == [100, 100, 100, 200, 50, 50, 50]
    assert [curve.phase(t) for t in (0, 15, 39, 99)] == ["a", "b", "c", "c"]
    assert DEMO_CURVE.duration == 720 and DEMO_CURVE.peak() == 1700


def test_time_compresses_whole_seconds_exactly() -> None:
    scale = TimeScale(20)
    assert scale.wall(15) == 0.75 and scale.whole_wall(120) == 6
    with pytest.raises(ValueError):
        scale.whole_wall(90)
    with pytest.raises(ValueError):
        TimeScale(7)
    assert [clock_text(s) for s in (0, 59.6, 61, 3725)] == ["0:00", "1:00", "1:01", "1:02:05"]
    assert scale.at(12345.0) == 0.0  # not started: everything is demo time 0


def _world(pods: list[PodState]) -> DemoWorld:
    scale = TimeScale(60)
    return DemoWorld(DEMO_CURVE, scale, objects.WEB, lambda: pods)


async def test_the_service_reads_the_synthetic_prometheus_over_http() -> None:
    pods = [
        PodState("web-a", True, True),
        PodState("web-b", True, True),
        PodState("web-c", True, False),
        PodState("web-d", False, False),
    ]
    world = _world(pods)
    spec = parse_target_spec(objects.target(world.scale)["spec"])
    query = TargetQuery(
        namespace="default",
        name="web",
        scale_target=spec.scale_target_ref,
        selector="app=web",
        pod_names=[p.name for p in pods],
        metrics=spec.metrics,
    )
    async with SyntheticPrometheus(world.answer) as prometheus:
        settings = PrometheusSettings(url=prometheus.url, cpu_rate_window=0.5)
        async with PrometheusClient(settings) as client:
            [[cpu, requests]] = await MetricsReader(client, settings).read([query], 1000.0)
    assert isinstance(cpu, ResourceReading) and isinstance(requests, ExternalReading)
    # 180/s over two ready pods: 25m + 90 × 2.5m each; the unready one warms up; the pending one has none
    assert {pod: usage.containers for pod, usage in cpu.pods.items()} == {
        "web-a": {"app": 250},
        "web-b": {"app": 250},
        "web-c": {"app": 200},
    }
    assert requests.values == (180_000,)
    assert world.utilization(180) == pytest.approx(50.0)


async def test_an_unknown_query_is_a_bad_query() -> None:
    world = _world([])
    async with SyntheticPrometheus(world.answer) as prometheus:
        settings = PrometheusSettings(url=prometheus.url)
        async with PrometheusClient(settings) as client:
            spec = parse_target_spec(
                {
                    "scaleTargetRef": {"kind": "Deployment", "name": "web"},
                    "maxReplicas": 3,
                    "metrics": [
                        {
                            "type": "External",
                            "external": {
                                "metric": {"name": "x"},
                                "query": "sum(up)",
                                "target": {"type": "Value", "value": "1"},
                            },
                        }
                    ],
                }
            )
            query = TargetQuery("default", "web", spec.scale_target_ref, "app=web", [], spec.metrics)
            [[reading]] = await MetricsReader(client, settings).read([query], 0.0)
    assert isinstance(reading, MetricFailure) and "answers queries over" in reading.message


def test_fed_counters_bend_but_never_reset() -> None:
    origin = continuous_origin(0.5, 0.0, 2.0, 100.0)
    assert 2.0 * (100.0 - origin) == pytest.approx(0.5 * 100.0)  # the same value where the rate changes


def test_pods_that_go_away_leave_no_series() -> None:
    pods = [PodState("web-a", True, True)]
    exporter = MetricsExporter()
    feeder = ExporterFeeder(_world(pods), exporter, interval=1.0)
    feeder.update()
    assert 'pod="web-a"' in exporter.render() and "ingress_http_requests_total" in exporter.render()
    pods.clear()
    feeder.update()
    assert 'pod="web-a"' not in exporter.render()


def test_the_timeline_prints_a_metric_without_nil() -> None:
    scale = TimeScale(60)
    scale.start()
    world = SimpleNamespace(curve=DEMO_CURVE, utilization=lambda load: 50.0)
    recorder = SimpleNamespace(ready=2, pods=[1, 2], replicas=2)
    out = io.StringIO()
    timeline = Timeline(out, scale, world, recorder, limits={})  # type: ignore[arg-type]
    timeline.on_decision(
        {
            "current_replicas": 2,
            "replicas": 4,
            "proposal": 4,
            "applied": True,
            "reason": "external metric requests_per_second(<nil>) above target",
        }
    )
    assert out.getvalue().rstrip().endswith("external metric requests_per_second above target")
