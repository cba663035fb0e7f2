"""Partial answers: Thanos Query or a VictoriaMetrics cluster answering without one of its stores, as a
success with less data. The proxy in front of the real Prometheus makes genuine answers partial the way each
backend does (a Thanos store's warning, vmselect's ``"isPartial": true``) and drops what the missing store
held: a quarter of the queue, half of the pods.

Failed before: the warnings were parsed and never read, ``isPartial`` was ignored, so the smaller sum read as
a real drop and scaled down. Now the metric fails while it lasts (no scale-down; the target says "partial
answer from <backend>: <its words>"), and the first whole answer decides again. Other warnings leave the
value standing: logged once per text, counted.
"""

from __future__ import annotations

import asyncio

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.promproxy import PrometheusProxy, Rule, thanos_partial, vm_partial, with_warning
from tests.chaos.service import monotonic, wait_until
from tests.chaos.test_prometheus_faults import HOLD, pod_names, started
from tests.chaos.watch import scaling_active
from tests.chaos.world import replicas_of, set_load, target
from tests.service.cluster import deployment

# Thanos' own words for a store whose stream broke off (pkg/store/proxy_merge.go).
STORE_DOWN = (
    'receive series from Addr: 10.0.0.7:10901 LabelSets: {replica="b"} MinTime: 0 MaxTime: 9: '
    "rpc error: code = Unavailable desc = connection refused"
)
ANNOTATION = 'PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "x"'


async def test_a_partial_sum_never_scales_down_and_whole_answers_decide_again(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    await set_load(exporter, prometheus, 40)
    await started(chaos, cluster)
    service = chaos.instances[0]
    timeline = chaos.timeline("web")
    rule = proxy.add(Rule("queue_depth", transform=thanos_partial(STORE_DOWN, keep=0.25)))  # 40 reads as 10
    began = monotonic()
    await wait_until(
        lambda: scaling_active(cluster, "web").get("reason") == "FailedGetExternalMetric",
        15,
        "ScalingActive False / FailedGetExternalMetric",
    )
    message = scaling_active(cluster, "web")["message"]
    assert f"partial answer from {proxy.url}: receive series from Addr: 10.0.0.7:10901" in message, message
    await asyncio.sleep(HOLD)
    assert timeline.replicas_between(began) == {4}, timeline.describe()
    assert cluster.events("default", involved_name="web", reason="FailedGetExternalMetric")
    assert (await service.metric("autoscaler_prometheus_warnings_total", kind="partial") or 0) >= 3
    assert (await service.metric("autoscaler_prometheus_queries_total", outcome="partial") or 0) >= 3
    proxy.remove(rule)
    await set_load(exporter, prometheus, 60)
    # The scale is written before the status, so the test waits for both.
    await wait_until(
        lambda: replicas_of(cluster, "web") == 6 and scaling_active(cluster, "web").get("status") == "True",
        15,
        "the decision of the first whole answers, and ScalingActive True",
    )

    # A warning that does not say the answer is partial: the value stands, the warning is logged once.
    proxy.add(Rule("queue_depth", transform=with_warning(ANNOTATION)))
    await set_load(exporter, prometheus, 80)
    await wait_until(lambda: replicas_of(cluster, "web") == 8, 15, "the scale-up read from an answer with a warning")
    await asyncio.sleep(3.0)
    logged = [line for line in service.lines() if "answered with a warning" in str(line.get("event", ""))]
    assert len(logged) == 1, logged
    assert "PromQL info: metric might not be a counter" in logged[0]["event"] and "default/web" in logged[0]["event"]
    assert (await service.metric("autoscaler_prometheus_warnings_total", kind="other") or 0) >= 3
    assert scaling_active(cluster, "web").get("status") == "True"


async def test_a_partial_batched_answer_fails_every_target_it_serves(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Two targets read one batched per-pod query (``<<scope>>``); a VictoriaMetrics cluster marks the answer
    ``isPartial`` and half the pods are missing. Every answer is decoded a series at a time
    (``largeResponseBytes: 0``): the streaming decoder sees the flag as the whole decode does."""
    names = ("web", "api")
    for name in names:
        cluster.create(deployment(name, 3))
    await wait_until(lambda: all(len(pod_names(cluster, n)) == 3 for n in names), 20, "three pods each")
    for name in names:
        for pod in pod_names(cluster, name):
            exporter.set("pod_queue", {"namespace": "default", "pod": pod}, 10)
    await asyncio.to_thread(prometheus.wait_for, 'pod_queue{namespace="default"}', lambda r: len(r) == 6, 15)
    per_pod = {
        "type": "Pods",
        "pods": {
            "metric": {"name": "pod_queue"},
            "query": "sum by (namespace, pod) (pod_queue{<<scope>>})",
            "target": {"type": "AverageValue", "averageValue": "10"},
        },
    }
    for name in names:
        cluster.create(target(name, metrics=[per_pod]))
    await chaos.service("one", prometheus={"largeResponseBytes": 0})
    for name in names:
        await wait_until(
            lambda n=name: scaling_active(cluster, n).get("reason") == "ValidMetricFound",
            30,
            f"the first decision of {name}",
        )
    timelines = {name: chaos.timeline(name) for name in names}
    rule = proxy.add(Rule("pod_queue", transform=vm_partial(keep=0.5)))
    began = monotonic()
    for name in names:
        await wait_until(
            lambda n=name: scaling_active(cluster, n).get("reason") == "FailedGetPodsMetric",
            15,
            f"ScalingActive False / FailedGetPodsMetric on {name}",
        )
        assert '"isPartial": true' in scaling_active(cluster, name)["message"]
    for name in names:
        for pod in pod_names(cluster, name):
            exporter.set("pod_queue", {"namespace": "default", "pod": pod}, 1)  # would scale down to 1
    await asyncio.sleep(HOLD)
    for name, timeline in timelines.items():
        assert timeline.replicas_between(began) == {3}, f"{name}: {timeline.describe()}"
    sent = proxy.queries("pod_queue", began)
    assert sent and all('namespace="default"' in s.query for s in sent)  # one query served both targets
    proxy.remove(rule)
    for name in names:
        await wait_until(lambda n=name: replicas_of(cluster, n) == 1, 20, f"{name}'s scale-down once answers are whole")
