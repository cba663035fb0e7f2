"""The converted PromQL, run by this project's reader against a real Prometheus, gives each pod,
object and queue the value prometheus-adapter's rule serves for the same series.

The adapter's side is the query the adapter would send, written out here by hand from its
documented rendering (``<<.LabelMatchers>>`` = the metric's selector, ``namespace="…"``, and
``pod=~"a|b"`` for the pods asked for; ``<<.GroupBy>>`` = the resource's label), and its value is
``int64(value × 1000)`` milli (truncated), as its provider converts samples. This project rounds
up to the milli as Kubernetes' MilliValue does, so the two may differ by at most 1 milli.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from autoscaler.convert.adapter_config import read_adapter_config
from autoscaler.convert.hpa import convert_hpa
from autoscaler.core.observation import ExternalReading, ObjectReading, PodsReading, ResourceReading
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.prometheus import MetricsReader, PrometheusClient, PrometheusSettings
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.values.fields import ErrorList
from autoscaler_sandbox import PrometheusSandbox
from tests.convert.helpers import ADAPTER_CONFIG, HPAS, documents
from tests.convert.series_data import T_END

pytestmark = pytest.mark.prometheus
PODS = ("web-1", "web-2")


@pytest.fixture
async def client(series_prometheus: PrometheusSandbox) -> AsyncIterator[PrometheusClient]:
    async with PrometheusClient(PrometheusSettings(url=series_prometheus.url, cpu_rate_window=180.0)) as opened:
        yield opened


async def adapter_values(client: PrometheusClient, query: str, label: str) -> dict[str, int]:
    """What the adapter serves: each series' value by the resource label, truncated to the milli."""
    result = await client.query(query, T_END)
    return {series.labels.get(label, ""): math.trunc(float(series.value) * 1000) for series in result.vector}


def close(ours: int, theirs: int) -> bool:
    return 0 <= ours - theirs <= 1  # ours rounds up, the adapter truncates


async def read(client: PrometheusClient, hpa: dict[str, Any]) -> list[Any]:
    errors = ErrorList()
    config = read_adapter_config(yaml.safe_load(ADAPTER_CONFIG.read_text()), "adapter", errors)
    conversion = convert_hpa(hpa, "hpas.yaml", config)
    assert conversion.target is not None, conversion.errors
    spec = parse_target_spec(conversion.target["spec"], "spec")
    reader = MetricsReader(client, client.settings)
    rows = await reader.read([TargetQuery("shop", "web", spec.scale_target_ref, "app=web", PODS, spec.metrics)], T_END)
    return list(rows[0])


async def test_every_metric_of_the_hpa_reads_what_the_adapter_serves(client: PrometheusClient) -> None:
    hpa = next(d for d in documents(HPAS.read_text()) if d["metadata"]["name"] == "web")
    hpa["spec"]["metrics"].append(
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}
    )
    cpu, rps, ingress, queue, memory = await read(client, hpa)

    result = await client.query(
        'sum by (pod,container) (rate(container_cpu_usage_seconds_total{namespace="shop",pod=~"web-1|web-2",'
        'container!="",pod!=""}[3m]))',
        T_END,
    )
    theirs_cpu = {(s.labels["pod"], s.labels["container"]): math.trunc(float(s.value) * 1000) for s in result.vector}
    assert isinstance(cpu, ResourceReading)
    ours_cpu = {(p, c): v for p, u in cpu.pods.items() for c, v in u.containers.items()}
    # The adapter's rule keeps the pause container (container="POD"), and so does its conversion.
    assert (
        set(ours_cpu) == set(theirs_cpu) == {("web-1", "app"), ("web-1", "sidecar"), ("web-1", "POD"), ("web-2", "app")}
    )
    assert all(v is not None and close(v, theirs_cpu[k]) for k, v in ours_cpu.items()), (ours_cpu, theirs_cpu)

    theirs = await adapter_values(
        client, 'sum(rate(http_requests_total{verb="GET",namespace="shop",pod=~"web-1|web-2"}[1m])) by (pod)', "pod"
    )
    assert isinstance(rps, PodsReading)
    assert set(rps.pods) == set(theirs) == set(PODS)
    assert all(close(rps.pods[p].value, theirs[p]) for p in PODS), (rps, theirs)
    assert theirs == {"web-1": 2500, "web-2": 4000}

    theirs = await adapter_values(
        client,
        'sum(rate(nginx_ingress_controller_requests{namespace="shop",ingress="main-route"}[2m])) by (ingress)',
        "ingress",
    )
    assert isinstance(ingress, ObjectReading) and close(ingress.value, theirs["main-route"])
    assert theirs["main-route"] == 40_000

    theirs = await adapter_values(client, 'sum(queue_messages_ready{queue=~"jobs",namespace="shop"}) by ()', "")
    assert isinstance(queue, ExternalReading) and queue.values == (theirs[""],) == (42_000,)

    theirs = await adapter_values(
        client,
        "sum by (pod,container) (container_memory_working_set_bytes{"
        'namespace="shop",pod=~"web-1|web-2",container!="",pod!=""})',
        "pod",
    )
    assert isinstance(memory, ResourceReading)
    assert (
        {p: u.containers["app"] for p, u in memory.pods.items()}
        == {"web-1": 104857600_000, "web-2": 209715200_000}
        == {p: v for p, v in theirs.items()}
    )


async def test_renamed_pod_and_namespace_labels(client: PrometheusClient) -> None:
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": "app_sessions"},
                        "target": {"type": "AverageValue", "averageValue": "20"},
                    },
                }
            ],
        },
    }
    (sessions,) = await read(client, hpa)
    theirs = await adapter_values(
        client,
        'max(app_sessions{kubernetes_namespace="shop",kubernetes_pod_name=~"web-1|web-2"}) by (kubernetes_pod_name)',
        "kubernetes_pod_name",
    )
    assert isinstance(sessions, PodsReading)
    assert {p: s.value for p, s in sessions.pods.items()} == theirs == {"web-1": 12_000, "web-2": 30_000}
