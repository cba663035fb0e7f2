"""Isolation: one target's trouble stays its own (D2, D5, F18), and a mass start does not burst (F20).

The healthy targets' schedule is read as a user would: each target's
``autoscaler_target_last_sync_timestamp_seconds`` must keep moving every period (1 s here), and the
service's own ``autoscaler_event_loop_lag_seconds`` must stay low.
"""

from __future__ import annotations

import asyncio
from typing import Any

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.promproxy import PrometheusProxy, Rule, huge_vector
from tests.chaos.service import ServiceProcess, monotonic, wait_until
from tests.chaos.watch import Key, SyncWatch, loop_lag_counts, scaling_active
from tests.chaos.world import queue_metric, set_load, target
from tests.service.cluster import deployment

HEALTHY_NAMESPACES = 4
HEALTHY_PER_NAMESPACE = 3


async def healthy_targets(chaos: Chaos, cluster: KubeEmulator, **settings: Any) -> tuple[list[Key], ServiceProcess]:
    """Twelve targets in four namespaces reading the queue, the service started and every one synced."""
    keys = [(f"ns{n}", f"t{n}{i}") for n in range(HEALTHY_NAMESPACES) for i in range(HEALTHY_PER_NAMESPACE)]
    for namespace, name in keys:
        cluster.create(deployment(name, 2, namespace=namespace))
        cluster.create(target(name, namespace=namespace))
    service = await chaos.service("one", **settings)
    for namespace, name in keys:
        await wait_until(
            lambda n=name, ns=namespace: scaling_active(cluster, n, ns).get("status") == "True",
            30,
            f"the first decision of {namespace}/{name}",
        )
    return keys, service


# The longest a healthy target may go without a sync (its period is 1 s): starved, the targets went ~10 s (d2);
# a loaded 2-core machine delays a sync by a second or more now and then (2.8 s seen), which is not starving.
MAX_SYNC_GAP = 4.0


def assert_on_schedule(watch: SyncWatch, since: float, what: str) -> None:
    gap, which = watch.worst(since)
    assert gap < MAX_SYNC_GAP, f"{which[0]}/{which[1]} went {gap:.1f}s without a sync (period 1s) while {what}"


async def test_d2_a_target_with_many_slow_queries_does_not_starve_the_others(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Failed before: the hog's 20 queries (5 s each, timeout 2 s) took all 4 client slots before their
    deadlines started, and the healthy targets' queries queued behind them for ~10 s. Now a target's own
    queries get a quarter of the slots and the deadline covers the wait."""
    await set_load(exporter, prometheus, 20)
    keys, service = await healthy_targets(chaos, cluster, prometheus={"concurrency": 4, "timeoutSeconds": 2})
    watch = SyncWatch(service, keys).start()
    try:
        proxy.add(Rule("hog_", delay=5.0))
        cluster.create(deployment("hog", 2, namespace="hog"))
        slow = [queue_metric(f"sum(hog_{i})", name=f"hog_{i}") for i in range(20)]
        cluster.create(target("hog", namespace="hog", metrics=slow))
        began = monotonic()
        await wait_until(
            lambda: scaling_active(cluster, "hog", "hog").get("reason") == "FailedGetExternalMetric",
            20,
            "the hog's ScalingActive False",
        )
        await asyncio.sleep(8.0)
        assert_on_schedule(watch, began + 1.0, "another target's 20 queries were slow")
        message = scaling_active(cluster, "hog", "hog")["message"]
        assert "within 2s" in message, message
        for namespace, name in keys:
            assert scaling_active(cluster, name, namespace).get("status") == "True"
    finally:
        await watch.stop()
        proxy.clear()


async def test_d5_f18_a_huge_answer_is_parsed_off_the_loop(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Failed before: a 27 MB answer (120,000 series) was decoded on the event loop, which stalled it for
    ~1 s each time. Now it is decoded in a thread a series at a time, the series no target owns left out,
    and the loop's lag stays low: no sample of the loop-lag monitor (a 0.5 s timer) reaches 500 ms, and at most
    a quarter pass 100 ms (on an idle machine none does; other processes take the CPU on a loaded one)."""
    # Made before the service starts: building it blocks this test's loop (the emulator's) for a while.
    body = await asyncio.to_thread(huge_vector, 120_000, namespace="big")
    assert len(body) > 25_000_000
    await set_load(exporter, prometheus, 20)
    keys, service = await healthy_targets(chaos, cluster)
    await asyncio.sleep(3.0)  # past the start-up's full collections (see loop/collector.py)
    rule = proxy.add(Rule("stranger_load", body=body, times=5))
    watch = SyncWatch(service, keys).start()
    try:
        measured, late = await loop_lag_counts(service, 0.1)
        _, late_500 = await loop_lag_counts(service, 0.5)
        cluster.create(deployment("big", 2, namespace="big"))
        per_pod = {
            "type": "Pods",
            "pods": {
                "metric": {"name": "stranger_load"},
                "query": "sum by (namespace, pod) (stranger_load{<<scope>>})",
                "target": {"type": "AverageValue", "averageValue": "10"},
            },
        }
        cluster.create(target("big", namespace="big", metrics=[per_pod]))
        began = monotonic()
        await wait_until(lambda: rule.hits >= 5, 30, "five huge answers")
        await wait_until(
            # (Not how many: a batched answer's count moves with every target it serves, issue 37 item 10.)
            lambda: (
                "none of the series it returned belongs to the target's pods"
                in scaling_active(cluster, "big", "big").get("message", "")
            ),
            10,
            "the big target's failure",
        )
        await asyncio.sleep(1.0)
        measured_after, late_after = await loop_lag_counts(service, 0.1)
        # The monitor times one 0.5 s sleep after another: ~10 samples here. A few may be late on a loaded
        # 2-core machine (other processes take the CPU); none may be as late as a decode on the loop was
        # (0.5-2.5 s: every sample after the first huge answer).
        samples = measured_after - measured
        over_100ms = late_after - late
        _, late_500_after = await loop_lag_counts(service, 0.5)
        assert samples >= 8
        assert over_100ms <= samples / 4, f"{over_100ms:.0f} of {samples:.0f} loop-lag samples were over 100 ms"
        assert late_500_after - late_500 == 0, "a loop-lag sample was over 500 ms"
        assert_on_schedule(watch, began + 1.0, "another target's query answered 27 MB")
        assert (await service.metric("autoscaler_prometheus_large_answers_total") or 0) >= 5
    finally:
        await watch.stop()
        proxy.clear()


async def test_d5_an_answer_past_the_cap_fails_its_query_clearly(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """New (no cap before): an answer larger than prometheus.maxResponseBytes is not read; its metric fails
    saying so, and nothing scales."""
    await set_load(exporter, prometheus, 20)
    proxy.add(Rule("queue_depth", body=huge_vector(20_000)))
    cluster.create(deployment("web", 4))
    cluster.create(target("web"))
    await chaos.service("one", prometheus={"maxResponseBytes": 1_000_000})
    timeline = chaos.timeline("web")
    await wait_until(
        lambda: "maxResponseBytes" in scaling_active(cluster, "web").get("message", ""), 30, "a failure naming the cap"
    )
    assert scaling_active(cluster, "web")["reason"] == "FailedGetExternalMetric"
    assert timeline.replicas_between(0.0) == {4}


async def test_f18_a_broken_query_costs_nobody_else(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Already held for a query Prometheus rejects at once (a test that proves it): the broken target says
    why, the others keep their schedule."""
    await set_load(exporter, prometheus, 20)
    keys, service = await healthy_targets(chaos, cluster)
    watch = SyncWatch(service, keys).start()
    try:
        cluster.create(deployment("broken", 2, namespace="ns0"))
        cluster.create(target("broken", namespace="ns0", metrics=[queue_metric("sum(queue_depth", name="broken")]))
        began = monotonic()
        await wait_until(
            lambda: "parse error" in scaling_active(cluster, "broken", "ns0").get("message", ""),
            20,
            "the broken target's failure",
        )
        await asyncio.sleep(5.0)
        assert_on_schedule(watch, began + 1.0, "a target in the same namespace had a broken query")
    finally:
        await watch.stop()


async def test_f20_a_mass_start_spreads_the_first_ticks_over_the_period(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Already held (a test that proves it): 40 namespaces' targets present at start-up sync on their
    namespaces' phases, spread over the period, not in one burst to Prometheus."""
    await set_load(exporter, prometheus, 10)
    for n in range(40):
        cluster.create(deployment(f"w{n}", 1, namespace=f"mass{n}"))
        cluster.create(target(f"w{n}", namespace=f"mass{n}"))
    await chaos.service("one", sync={"periodSeconds": 4})
    await wait_until(lambda: len(proxy.queries("queue_depth")) >= 40, 30, "the first period's queries")
    first = min(s.started for s in proxy.queries("queue_depth"))
    starts = [s.started - first for s in proxy.queries("queue_depth") if s.started - first < 4.0]
    buckets = [sum(1 for t in starts if k * 0.5 <= t < (k + 1) * 0.5) for k in range(8)]
    assert max(starts) >= 2.5, f"the first period's queries all came within {max(starts):.1f}s"
    assert max(buckets) <= 15, f"queries per half second of the first period: {buckets}"
