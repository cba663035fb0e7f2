"""Fault matrix rows F1–F7 and F19: Prometheus down, slow, erroring, answering NaN or nothing, covering only
some pods, failing one of two metrics, restarting. Each test drives the real ``autoscaler run`` through
the proxy in front of a real Prometheus, and asserts what a user sees: replicas over time, the target's
conditions and Events, the service's metrics.

Common to all: a metric that cannot be read never causes a scale (no scale-down during or right after
the fault), the target says why (ScalingActive False with upstream's reason for the metric's type, the
message naming the cause), and it recovers by itself within a few periods of the fault ending.
"""

from __future__ import annotations

import asyncio

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.promproxy import PrometheusProxy, Rule, duplicated, empty, values_to
from tests.chaos.service import monotonic, wait_until
from tests.chaos.watch import SyncWatch, scaling_active
from tests.chaos.world import queue_metric, replicas_of, set_load, target
from tests.service.cluster import deployment

# How long a test watches that nothing scales while a fault lasts: past the 4 s stabilization window.
HOLD = 6.0


async def started(chaos: Chaos, cluster: KubeEmulator, name: str = "web", replicas: int = 4, **spec: object) -> None:
    """A deployment and its target, the service running and the first decision made."""
    cluster.create(deployment(name, replicas))
    cluster.create(target(name, **spec))  # type: ignore[arg-type]
    await chaos.service("one")
    await wait_until(lambda: scaling_active(cluster, name).get("status") == "True", 30, "the first decision")


async def test_f1_prometheus_down_holds_then_recovers(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Already held before this work (a test that proves it): connection refused fails the metric, the
    target holds its replicas and says so, and the first answer after the outage decides again."""
    await set_load(exporter, prometheus, 40)
    await started(chaos, cluster)
    timeline = chaos.timeline("web")
    service = chaos.instances[0]
    await proxy.refuse()
    down = monotonic()
    await set_load(exporter, prometheus, 0)  # would scale down to 1, if the service could see it
    await wait_until(
        lambda: scaling_active(cluster, "web").get("reason") == "FailedGetExternalMetric",
        15,
        "ScalingActive False / FailedGetExternalMetric",
    )
    assert "unreachable" in scaling_active(cluster, "web")["message"]
    await asyncio.sleep(HOLD)
    assert timeline.replicas_between(down) == {4}, timeline.describe()
    assert cluster.events("default", involved_name="web", reason="FailedGetExternalMetric")
    assert (await service.metric("autoscaler_prometheus_errors_total", kind="unreachable") or 0) > 0
    await proxy.accept()
    back = monotonic()
    await wait_until(lambda: scaling_active(cluster, "web").get("status") == "True", 10, "recovery")
    await wait_until(lambda: replicas_of(cluster, "web") == 1, 15, "the scale-down the load asks for")
    assert monotonic() - back < 15


async def test_f2_a_slow_query_costs_only_its_own_target(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Failed before: a query slower than the timeout held every target of its batch (its namespace)
    until it timed out, so with a 4 s timeout and a 1 s period its neighbours synced every ~4 s."""
    await set_load(exporter, prometheus, 40)
    exporter.set("slow_depth", {"queue": "slow"}, 40)
    cluster.create(deployment("slow", 4))
    cluster.create(target("slow", metrics=[queue_metric('sum(slow_depth{queue="slow"})', name="slow_depth")]))
    for name in ("a", "b", "c"):
        cluster.create(deployment(name, 4))
        cluster.create(target(name))
    service = await chaos.service("one", prometheus={"timeoutSeconds": 4})
    for name in ("slow", "a", "b", "c"):
        await wait_until(
            lambda n=name: scaling_active(cluster, n).get("status") == "True", 30, f"the first decision of {name}"
        )
    timeline = chaos.timeline("slow")
    watch = SyncWatch(service, [("default", n) for n in ("a", "b", "c")]).start()
    try:
        proxy.add(Rule("slow_depth", delay=10.0))
        slowed = monotonic()
        exporter.set("slow_depth", {"queue": "slow"}, 0)  # the slow target would scale down, if it could see it
        await wait_until(
            lambda: scaling_active(cluster, "slow").get("reason") == "FailedGetExternalMetric",
            20,
            "the slow target's ScalingActive False",
        )
        assert "did not answer within 4s" in scaling_active(cluster, "slow")["message"]
        await asyncio.sleep(HOLD)
        gap, which = watch.worst(slowed + 1.0)
        assert gap < 2.5, f"{which} went {gap:.1f}s without a sync while another target's query was slow"
        assert timeline.replicas_between(slowed) == {4}, timeline.describe()
    finally:
        await watch.stop()
        proxy.clear()


async def test_f3_an_invalid_query_is_marked_and_not_resent_every_period(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Failed before: a query Prometheus rejects (400 bad_data) was sent again every period. Now the
    metric is invalid with Prometheus' own text, and the query waits a slow backoff."""
    await set_load(exporter, prometheus, 40)
    cluster.create(deployment("web", 4))
    broken = queue_metric("sum(rate(queue_depth[1m])", name="broken")  # unbalanced parenthesis
    cluster.create(target("web", metrics=[broken]))
    service = await chaos.service("one")
    timeline = chaos.timeline("web")
    began = monotonic()
    await wait_until(
        lambda: scaling_active(cluster, "web").get("reason") == "FailedGetExternalMetric",
        30,
        "ScalingActive False / FailedGetExternalMetric",
    )
    await asyncio.sleep(HOLD)
    sent = proxy.queries(r"rate\(queue_depth", began)
    assert len(sent) == 1, f"the invalid query was sent {len(sent)} times in {monotonic() - began:.0f}s"
    message = scaling_active(cluster, "web")["message"]
    assert "HTTP 400" in message and "bad_data" in message and "parse error" in message, message
    assert "sent again only after a slow backoff" in message
    assert timeline.replicas_between(began) == {4}
    assert cluster.events("default", involved_name="web", reason="FailedGetExternalMetric")
    assert (await service.metric("autoscaler_prometheus_errors_total", kind="bad_query") or 0) == 1


async def test_f3_a_503_is_transient(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Already held (a test that proves it): 503 fails that sync's metric (no scale), is asked again next
    period, and the first good answer decides again."""
    await set_load(exporter, prometheus, 40)
    await started(chaos, cluster)
    timeline = chaos.timeline("web")
    rule = proxy.add(Rule("queue_depth", status=503, error_type="unavailable", error="overloaded"))
    began = monotonic()
    await set_load(exporter, prometheus, 0)
    await wait_until(
        lambda: scaling_active(cluster, "web").get("reason") == "FailedGetExternalMetric", 15, "ScalingActive False"
    )
    assert "HTTP 503" in scaling_active(cluster, "web")["message"]
    await asyncio.sleep(HOLD)
    assert timeline.replicas_between(began) == {4}, timeline.describe()
    assert rule.hits >= 4  # asked every period: a 503 is not a verdict on the query
    proxy.remove(rule)
    await wait_until(lambda: replicas_of(cluster, "web") == 1, 15, "the scale-down once Prometheus answers")


async def test_f4_nan_and_infinite_values_are_missing_never_zero(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Already held (a test that proves it): NaN, +Inf and -Inf fail the External metric (never read as 0,
    which would scale down; never as a huge number, which would scale up)."""
    await set_load(exporter, prometheus, 40)
    await started(chaos, cluster)
    timeline = chaos.timeline("web")
    began = monotonic()
    for text in ("NaN", "+Inf", "-Inf"):
        rule = proxy.add(Rule("queue_depth", transform=values_to(text)))
        await wait_until(
            lambda t=text: t in scaling_active(cluster, "web").get("message", ""), 15, f"a failure naming {text}"
        )
        assert scaling_active(cluster, "web")["reason"] == "FailedGetExternalMetric"
        await asyncio.sleep(2.0)
        proxy.remove(rule)
    assert timeline.replicas_between(began) == {4}, timeline.describe()
    await wait_until(lambda: scaling_active(cluster, "web").get("status") == "True", 10, "recovery")


async def test_f5_an_empty_answer_is_missing_no_scale_down(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Already held (a test that proves it): an empty vector (series gone stale) fails the metric."""
    await set_load(exporter, prometheus, 40)
    await started(chaos, cluster)
    timeline = chaos.timeline("web")
    rule = proxy.add(Rule("queue_depth", transform=empty))
    began = monotonic()
    await wait_until(
        lambda: scaling_active(cluster, "web").get("reason") == "FailedGetExternalMetric", 15, "ScalingActive False"
    )
    assert "no series" in scaling_active(cluster, "web")["message"]
    await asyncio.sleep(HOLD)
    assert timeline.replicas_between(began) == {4}, timeline.describe()
    proxy.remove(rule)
    await wait_until(lambda: scaling_active(cluster, "web").get("status") == "True", 10, "recovery")


async def test_f7_two_metrics_one_failing_up_allowed_down_blocked(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Already held (upstream's rule, a test that proves it): with one metric failing, the healthy one may
    scale up, never down."""
    await set_load(exporter, prometheus, 40)
    exporter.set("other_depth", {"queue": "other"}, 10)
    other = queue_metric('sum(other_depth{queue="other"})', name="other_depth")
    await started(chaos, cluster, metrics=[queue_metric(), other])
    timeline = chaos.timeline("web")
    proxy.add(Rule("other_depth", status=500, error_type="internal", error="boom"))
    await set_load(exporter, prometheus, 80)
    await wait_until(lambda: replicas_of(cluster, "web") == 8, 20, "scale-up on the healthy metric")
    lowered = monotonic()
    await set_load(exporter, prometheus, 10)
    await asyncio.sleep(HOLD)
    assert timeline.replicas_between(lowered) == {8}, timeline.describe()
    proxy.clear()
    await wait_until(lambda: (replicas_of(cluster, "web") or 0) < 8, 15, "the scale-down once both metrics answer")


async def test_f19_a_prometheus_restart_redials_a_handful_without_errors(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Failed before: every kept-alive connection dropped at once made the next query on each fail (a
    burst of 'Server disconnected' errors and ScalingActive False). Now a dropped connection is re-dialled
    once at once, and the pool re-dials only what it needs, not one connection per target."""
    await set_load(exporter, prometheus, 40)
    names = [f"t{i}" for i in range(12)]
    for index, name in enumerate(names):
        namespace = f"ns{index % 4}"
        cluster.create(deployment(name, 4, namespace=namespace))
        cluster.create(target(name, namespace=namespace))
    service = await chaos.service("one", prometheus={"concurrency": 4})
    for index, name in enumerate(names):
        await wait_until(
            lambda n=name, ns=f"ns{index % 4}": scaling_active(cluster, n, ns).get("status") == "True",
            30,
            f"the first decision of {name}",
        )
    # Connection failures only: on a loaded machine a 0.3 s answer can also pass the 2 s deadline (a timeout,
    # another row's fault), which says nothing about how the pool re-dials.
    errors_before = await service.metric("autoscaler_prometheus_errors_total", kind="unreachable") or 0
    proxy.add(Rule("", delay=0.3))  # queries in flight when the connections drop, as in a real restart
    drops: list[float] = []
    for _ in range(3):
        await wait_until(lambda: proxy.in_flight.now >= 1, 10, "a query in flight", every=0.01)
        assert proxy.drop_connections() >= 1
        drops.append(monotonic())
        await asyncio.sleep(1.0)
    await asyncio.sleep(2.0)
    errors = (await service.metric("autoscaler_prometheus_errors_total", kind="unreachable") or 0) - errors_before
    assert errors == 0, f"{errors} queries failed after Prometheus dropped its connections"
    for drop, after in zip(drops, [*drops[1:], monotonic()], strict=True):
        dialled = {s.connection for s in proxy.seen if drop <= s.started < after}
        assert len(dialled) <= 4 + 2, f"{len(dialled)} connections after one restart"  # the pool's limit
    for index, name in enumerate(names):
        assert scaling_active(cluster, name, f"ns{index % 4}").get("status") == "True"


def pod_names(cluster: KubeEmulator, app: str) -> list[str]:
    return sorted(
        str(p["metadata"]["name"])
        for p in cluster.list("pods", "default", f"app={app}")
        if not p["metadata"].get("deletionTimestamp")
    )


async def test_f6_partial_pod_coverage_is_dampened_as_upstream(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Already held (upstream's rule, a test that proves it end to end): pods without a sample count as 0
    on a scale-up and as the target on a scale-down, so 2 of 4 pods at 3× the target give 6 replicas, not
    12, and the same 2 at a tenth of it (of 6 pods) give 5, not 1."""
    cluster.create(deployment("web", 4))
    await wait_until(lambda: len(pod_names(cluster, "web")) == 4, 20, "four pods")
    pods = pod_names(cluster, "web")
    for pod in pods:
        exporter.set("pod_load", {"namespace": "default", "pod": pod}, 10)
    await asyncio.to_thread(prometheus.wait_for, 'pod_load{namespace="default"}', lambda r: len(r) == 4, 15)
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
    timeline = chaos.timeline("web")
    await wait_until(lambda: scaling_active(cluster, "web").get("reason") == "ValidMetricFound", 30, "a decision")
    for pod in pods[:2]:
        exporter.set("pod_load", {"namespace": "default", "pod": pod}, 30)
    for pod in pods[2:]:
        exporter.remove("pod_load", {"namespace": "default", "pod": pod})
    rose = monotonic()
    await asyncio.to_thread(prometheus.wait_for, 'pod_load{namespace="default"}', lambda r: len(r) == 2, 15)
    await wait_until(lambda: replicas_of(cluster, "web") == 6, 20, "the dampened scale-up to 6")
    await asyncio.sleep(3.0)  # the 4 new pods have no samples either: 6 holds
    assert max(r or 0 for r in timeline.replicas_between(rose)) == 6, timeline.describe()
    for pod in pods[:2]:
        exporter.set("pod_load", {"namespace": "default", "pod": pod}, 1)
    fell = monotonic()
    await wait_until(lambda: timeline.first(lambda s: (s.replicas or 6) < 6, fell) is not None, 20, "the scale-down")
    first_down = timeline.first(lambda s: (s.replicas or 6) < 6, fell)
    assert first_down is not None and first_down.replicas == 5, timeline.describe()


async def test_duplicated_series_fail_the_metric_never_double_it(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Every series twice, as a careless query frontend over two Prometheus replicas answers: for a per-pod
    metric a pod's value is ambiguous, so the metric fails (no scale on a doubled value, no scale-down);
    the target says which pod and which two series."""
    cluster.create(deployment("web", 4))
    await wait_until(lambda: len(pod_names(cluster, "web")) == 4, 20, "four pods")
    for pod in pod_names(cluster, "web"):
        exporter.set("pod_load_twice", {"namespace": "default", "pod": pod}, 10)
    await asyncio.to_thread(prometheus.wait_for, 'pod_load_twice{namespace="default"}', lambda r: len(r) == 4, 15)
    per_pod = {
        "type": "Pods",
        "pods": {
            "metric": {"name": "pod_load_twice"},
            "query": "sum by (namespace, pod) (pod_load_twice{<<scope>>})",
            "target": {"type": "AverageValue", "averageValue": "10"},
        },
    }
    cluster.create(target("web", metrics=[per_pod]))
    await chaos.service("one")
    timeline = chaos.timeline("web")
    await wait_until(lambda: scaling_active(cluster, "web").get("reason") == "ValidMetricFound", 30, "a decision")
    rule = proxy.add(Rule("pod_load_twice", transform=duplicated))
    since = monotonic()
    await wait_until(
        lambda: scaling_active(cluster, "web").get("reason") == "FailedGetPodsMetric",
        15,
        "ScalingActive False / FailedGetPodsMetric",
    )
    assert "duplicate series" in scaling_active(cluster, "web")["message"]
    for pod in pod_names(cluster, "web"):
        exporter.set("pod_load_twice", {"namespace": "default", "pod": pod}, 1)  # would scale down to 1
    await asyncio.sleep(HOLD)
    assert timeline.replicas_between(since) == {4}, timeline.describe()
    proxy.remove(rule)
    await wait_until(lambda: replicas_of(cluster, "web") == 1, 20, "the scale-down once answers are whole")
