"""F55 (issue 37, item 8): samples stamped far from the time their query was evaluated at.

A misbehaving remote-read, federation or VictoriaMetrics staleness setting answers with samples a year old
(or a year ahead), here of 0. Expected: the metric fails (a failed metric never votes for a scale-down),
ScalingActive says how old (or how far ahead) the sample is and what the limit is, nothing scales; a sample
within the bound (``prometheus.maxSampleAgeSeconds``, 300 s by default) is read as before, and a Prometheus
whose own clock is off (its ``Date`` and its samples' times off alike) is no stale answer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from kube_emulator.kubelet import is_ready
from tests.chaos.conftest import Chaos
from tests.chaos.promproxy import PrometheusProxy, Rule, Transform, shift_times, values_to
from tests.chaos.service import monotonic, wait_until
from tests.chaos.watch import scaling_active
from tests.chaos.world import replicas_of, set_load, target
from tests.service.cluster import deployment

YEAR = 365 * 86400.0
HOLD = 6.0  # past the 4 s scale-down stabilization window of the chaos settings


def shifted_zeros(offset: float) -> Transform:
    """Every sample's value 0, stamped ``offset`` seconds from the time Prometheus evaluated the query at."""
    zeros = values_to("0")

    def transform(document: dict[str, Any]) -> dict[str, Any]:
        return shift_times(zeros(document), offset)

    return transform


def shifted(offset: float) -> Transform:
    def transform(document: dict[str, Any]) -> dict[str, Any]:
        return shift_times(document, offset)

    return transform


async def external_target_at_four(chaos: Chaos, cluster: KubeEmulator, **settings: Any) -> None:
    """4 replicas reading the queue (40 deep, 10 a pod: 4 wanted), the first decision made."""
    cluster.create(deployment("web", 4))
    cluster.create(target("web"))
    await chaos.service("one", **settings)
    await wait_until(lambda: scaling_active(cluster, "web").get("reason") == "ValidMetricFound", 30, "a first decision")


async def held_with_message(cluster: KubeEmulator, chaos: Chaos, reason: str, *parts: str) -> str:
    """Waits for ScalingActive False with ``reason``, then checks that nothing scales for HOLD seconds."""
    timeline = chaos.timeline("web")
    since = monotonic()
    await wait_until(lambda: scaling_active(cluster, "web").get("reason") == reason, 20, f"ScalingActive {reason}")
    message = scaling_active(cluster, "web")["message"]
    for part in parts:
        assert part in message, message
    await asyncio.sleep(HOLD)
    assert timeline.replicas_between(since) == {4}, timeline.describe()
    assert scaling_active(cluster, "web")["message"] == message  # the same words every sync
    return message


async def test_i37_8_a_sample_a_year_old_fails_the_metric_and_names_its_age(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Failed before: the year-old 0 was read as the queue's depth, ValidMetricFound, and 4 → 1."""
    await set_load(exporter, prometheus, 40)
    await external_target_at_four(chaos, cluster)
    rule = proxy.add(Rule("queue_depth", transform=shifted_zeros(-YEAR)))
    message = await held_with_message(
        cluster, chaos, "FailedGetExternalMetric", "365d old", "prometheus.maxSampleAgeSeconds", "300s"
    )
    assert 'queue="jobs"' in message or "series" in message, message
    proxy.remove(rule)
    await wait_until(lambda: scaling_active(cluster, "web").get("status") == "True", 15, "recovery")
    assert replicas_of(cluster, "web") == 4


async def test_i37_8_a_sample_a_year_ahead_fails_the_metric_and_says_how_far(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Failed before: the 0 from a year ahead was read as now, and 4 → 1."""
    await set_load(exporter, prometheus, 40)
    await external_target_at_four(chaos, cluster)
    proxy.add(Rule("queue_depth", transform=shifted_zeros(+YEAR)))
    await held_with_message(cluster, chaos, "FailedGetExternalMetric", "365d ahead of Prometheus' time", "10s")


async def test_i37_8_a_per_pod_sample_a_year_old_fails_the_metric_naming_the_pod(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """The same for a Pods metric, read as its answer is decoded (the batched per-pod path). Failed
    before: the pods' year-old 0s were their load, and 4 → 1."""
    cluster.create(deployment("web", 4))
    await wait_until(
        lambda: sum(is_ready(p) for p in cluster.list("pods", "default", label_selector="app=web")) == 4,
        30,
        "four ready pods",
    )
    pods = sorted(p["metadata"]["name"] for p in cluster.list("pods", "default", label_selector="app=web"))
    for pod in pods:
        exporter.set("pod_load", {"namespace": "default", "pod": pod}, 10)
    await asyncio.to_thread(
        prometheus.wait_for, "pod_load", lambda result: len(result) == 4 and all(r["value"][1] == "10" for r in result)
    )
    per_pod = {
        "type": "Pods",
        "pods": {
            "metric": {"name": "pod_load"},
            "query": "sum by (namespace, pod) (pod_load{<<scope>>})",
            "target": {"type": "AverageValue", "averageValue": "10"},
        },
    }
    cluster.create(target("web", metrics=[per_pod]))
    await chaos.service("one")
    await wait_until(lambda: scaling_active(cluster, "web").get("reason") == "ValidMetricFound", 30, "a first decision")
    proxy.add(Rule("pod_load", transform=shifted_zeros(-YEAR)))
    message = await held_with_message(
        cluster, chaos, "FailedGetPodsMetric", "365d old", "prometheus.maxSampleAgeSeconds"
    )
    assert any(f'pod "{pod}"' in message for pod in pods), message


async def test_i37_8_a_sample_within_the_bound_is_read(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """A sample a minute old (a VictoriaMetrics' latency offset is 30 s) is within the 300 s default, and a
    Prometheus whose clock runs ten minutes ahead stamps its samples by that clock and says so in its
    Date: both are read as before, and the load's rise scales up."""
    await set_load(exporter, prometheus, 40)
    await external_target_at_four(chaos, cluster)
    proxy.add(Rule("queue_depth", transform=shifted(-60.0)))
    await set_load(exporter, prometheus, 60)
    await wait_until(lambda: replicas_of(cluster, "web") == 6, 15, "the scale-up to 6 on a minute-old sample")
    proxy.clear()
    proxy.clock_offset = 600.0  # every answer's Date and sample times ten minutes ahead
    await set_load(exporter, prometheus, 80)
    await wait_until(lambda: replicas_of(cluster, "web") == 8, 15, "the scale-up to 8 from a Prometheus 10 min ahead")
    assert scaling_active(cluster, "web")["reason"] == "ValidMetricFound"
