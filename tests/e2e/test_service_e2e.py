"""``autoscaler run`` end to end: a real Prometheus, the Kubernetes API emulator, the service process.

Each test drives the load through the exporter Prometheus scrapes (a queue depth per pod of 10) and
watches what the service does to the emulated Deployment.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import time
from typing import Any

import pytest

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.e2e.conftest import until
from tests.service.cluster import condition, deployment, replicas_of, status_of

pytestmark = pytest.mark.prometheus

QUEUE = {
    "type": "External",
    "external": {
        "metric": {"name": "queue_depth"},
        "query": 'sum(queue_depth{queue="jobs"})',
        "target": {"type": "AverageValue", "averageValue": "10"},
    },
}


def target(name: str, workload: str, behavior: dict[str, Any] | None = None, max_replicas: int = 20) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": workload},
        "minReplicas": 1,
        "maxReplicas": max_replicas,
        "metrics": [copy.deepcopy(QUEUE)],
    }
    if behavior is not None:
        spec["behavior"] = behavior
    return {
        "apiVersion": "autoscaler.dev/v1alpha1",
        "kind": "ScalingTarget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def set_load(exporter: MetricsExporter, depth: float, prometheus: PrometheusSandbox | None = None) -> None:
    """Set the queue depth; with ``prometheus``, also wait until Prometheus has scraped it."""
    exporter.set("queue_depth", {"queue": "jobs"}, depth)
    if prometheus is not None:
        prometheus.wait_for(
            'queue_depth{queue="jobs"}',
            lambda result: bool(result) and float(result[0]["value"][1]) == depth,
            timeout=15,
        )


def replica_changes(emu: KubeEmulator, name: str) -> list[int]:
    counts = [int(v["spec"]["replicas"]) for v in emu.history("deployments", name)]
    return [b - a for a, b in itertools.pairwise(counts) if b != a]


async def test_rise_at_the_allowed_rate_fall_after_the_window(
    cluster: KubeEmulator, prometheus: PrometheusSandbox, exporter: MetricsExporter, services: Any
) -> None:
    set_load(exporter, 20, prometheus)
    cluster.create(deployment("web", 2))
    behavior = {
        "scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 3}]},
        "scaleDown": {"stabilizationWindowSeconds": 5},
    }
    cluster.create(target("web", "web", behavior))
    services("one", cluster, prometheus)
    await until(
        lambda: (condition(status_of(cluster, "web"), "ScalingActive") or {}).get("status") == "True",
        what="the first decision",
    )
    set_load(exporter, 100)  # 100 / 10 per pod -> 10 replicas
    await until(lambda: replicas_of(cluster, "web") == 10, seconds=40, what="scale-up to 10")
    # never more than 2 pods per 3 s: each step is at most +2, and the events say when they happened
    assert all(change <= 2 for change in replica_changes(cluster, "web"))
    events = status_of(cluster, "web")["history"]["scaleUpEvents"]
    assert events and all(e["change"] <= 2 for e in events)
    set_load(exporter, 10)  # -> 1 replica, but only after a 5 s window
    dropped = time.monotonic()
    await until(lambda: replicas_of(cluster, "web") < 10, seconds=40, what="scale-down")
    # The last high recommendation came at most one sync period (1 s) before the load fell.
    assert time.monotonic() - dropped >= 5.0 - 1.0
    await until(lambda: replicas_of(cluster, "web") == 1, seconds=20, what="down to 1")


async def test_prometheus_outage_holds_and_recovers(
    cluster: KubeEmulator, prometheus: PrometheusSandbox, exporter: MetricsExporter, services: Any
) -> None:
    set_load(exporter, 40, prometheus)
    cluster.create(deployment("web", 4))
    cluster.create(target("web", "web", {"scaleDown": {"stabilizationWindowSeconds": 0}}))
    services("one", cluster, prometheus)
    await until(
        lambda: (condition(status_of(cluster, "web"), "ScalingActive") or {}).get("status") == "True",
        what="the first decision",
    )
    set_load(exporter, 0)  # would scale down to 1 ...
    prometheus.stop()  # ... but Prometheus is gone before it can tell
    try:
        await until(
            lambda: (
                (condition(status_of(cluster, "web"), "ScalingActive") or {}).get("reason") == "FailedGetExternalMetric"
            ),
            seconds=20,
            what="ScalingActive False",
        )
        assert replicas_of(cluster, "web") == 4
        assert cluster.events("default", involved_name="web", reason="FailedGetExternalMetric")
    finally:
        prometheus.start()
    set_load(exporter, 60)
    # The scale is written before the status: wait for both.
    await until(
        lambda: (
            replicas_of(cluster, "web") == 6
            and (condition(status_of(cluster, "web"), "ScalingActive") or {}).get("status") == "True"
        ),
        seconds=40,
        what="recovery by itself, and ScalingActive True",
    )


async def test_a_restart_keeps_the_stabilization_window(
    cluster: KubeEmulator, prometheus: PrometheusSandbox, exporter: MetricsExporter, services: Any
) -> None:
    set_load(exporter, 80, prometheus)
    cluster.create(deployment("web", 8))
    cluster.create(target("web", "web", {"scaleDown": {"stabilizationWindowSeconds": 10}}))
    first = services("first", cluster, prometheus)
    await until(lambda: status_of(cluster, "web").get("currentReplicas") == 8, what="the first status")
    set_load(exporter, 10)
    dropped = time.monotonic()
    await until(
        lambda: any(
            r.get("replicas") == 1 for r in status_of(cluster, "web").get("history", {}).get("recommendations", [])
        ),
        seconds=20,
        what="a low recommendation",
    )
    first.kill()  # killed mid-window, no clean shutdown
    services("second", cluster, prometheus)
    await until(lambda: replicas_of(cluster, "web") < 8, seconds=40, what="the scale-down")
    # the window held across the restart: no scale-down within 10 s of the last high recommendation,
    # which came at most one sync period (1 s) before the load fell
    assert time.monotonic() - dropped >= 10.0 - 1.0


async def test_targets_deleted_and_invalid(
    cluster: KubeEmulator, prometheus: PrometheusSandbox, exporter: MetricsExporter, services: Any
) -> None:
    set_load(exporter, 30, prometheus)
    cluster.create(deployment("web", 2))
    cluster.create(deployment("api", 2))
    bad = target("bad", "api")
    bad["spec"]["metrics"][0]["external"]["target"] = {"type": "Value", "value": "0"}  # the CRD's rules admit it
    cluster.create(bad)
    cluster.create(target("web", "web"))
    service = services("one", cluster, prometheus)
    await until(lambda: replicas_of(cluster, "web") == 3, what="the valid target scales")
    invalid = condition(status_of(cluster, "bad"), "ScalingActive")
    assert invalid is not None and invalid["reason"] == "InvalidSpec"
    assert "spec.metrics[0].external.target.value: must be positive" in invalid["message"]
    assert replicas_of(cluster, "api") == 2
    await until(lambda: any(line.get("event") == "decision" for line in service.lines()), what="a decision line")
    cluster.delete("scalingtargets.autoscaler.dev", "web")
    await until(
        lambda: any(line.get("event") == "target gone: reconciler stopped" for line in service.lines()),
        seconds=10,
        what="the reconciler to stop",
    )
    set_load(exporter, 90)
    decisions = sum(1 for line in service.lines() if line.get("event") == "decision")
    await asyncio.sleep(3)
    assert sum(1 for line in service.lines() if line.get("event") == "decision") == decisions
    assert replicas_of(cluster, "web") == 3


async def test_two_services_never_scale_at_once(
    cluster: KubeEmulator, prometheus: PrometheusSandbox, exporter: MetricsExporter, services: Any
) -> None:
    set_load(exporter, 30, prometheus)
    cluster.create(deployment("web", 1))
    cluster.create(target("web", "web", {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1}]}}))
    a = services("alpha", cluster, prometheus)
    b = services("beta", cluster, prometheus)
    await until(lambda: replicas_of(cluster, "web") == 3, what="scale-up to 3")
    lease = cluster.get("leases.coordination.k8s.io", "autoscaler", "default")
    assert lease is not None
    leader = str(lease["spec"]["holderIdentity"])
    acting = {
        e.get("reportingInstance") for e in cluster.events("default", involved_name="web", reason="SuccessfulRescale")
    }
    assert acting == {leader}, (acting, leader)
    assert all(change == 1 for change in replica_changes(cluster, "web"))  # one writer, one step at a time
    (a if leader.startswith("alpha") else b).kill()  # the leader dies without releasing its lease
    set_load(exporter, 50)
    await until(lambda: replicas_of(cluster, "web") == 5, seconds=30, what="the standby takes over")
    acting = {
        e.get("reportingInstance") for e in cluster.events("default", involved_name="web", reason="SuccessfulRescale")
    }
    assert len(acting) == 2


async def test_sigterm_stops_within_five_seconds_and_releases_the_lease(
    cluster: KubeEmulator, prometheus: PrometheusSandbox, exporter: MetricsExporter, services: Any
) -> None:
    set_load(exporter, 30, prometheus)
    cluster.create(deployment("web", 3))
    cluster.create(target("web", "web"))
    service = services("one", cluster, prometheus)
    await until(
        lambda: (
            (cluster.get("leases.coordination.k8s.io", "autoscaler", "default") or {})
            .get("spec", {})
            .get("holderIdentity", "")
            .startswith("one")
        ),
        what="leadership",
    )
    await until(lambda: status_of(cluster, "web").get("currentReplicas") == 3, what="a first sync")
    started = time.monotonic()
    code = await asyncio.to_thread(service.terminate)
    assert code == 0
    assert time.monotonic() - started < 5.0
    lease = cluster.get("leases.coordination.k8s.io", "autoscaler", "default")
    assert lease is not None and not lease["spec"].get("holderIdentity")  # released for a fast takeover
    events = [line.get("event") for line in service.lines()]
    assert "shutting down" in events and "stopped" in events


async def test_explain_prints_the_last_decision(
    cluster: KubeEmulator, prometheus: PrometheusSandbox, exporter: MetricsExporter, services: Any, tmp_path: Any
) -> None:
    import subprocess
    import sys

    set_load(exporter, 60, prometheus)
    cluster.create(deployment("web", 2))
    cluster.create(target("web", "web"))
    services("one", cluster, prometheus)
    await until(lambda: status_of(cluster, "web").get("currentReplicas") == 6, what="a scale-up")
    kubeconfig = cluster.write_kubeconfig(tmp_path / "explain-kubeconfig")
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "autoscaler", "explain", "default/web", "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("ScalingTarget default/web")
    assert "external metric queue_depth" in text and "proposes" in text
    assert "ScalingActive=True (ValidMetricFound)" in text


async def test_endpoints_of_the_running_service(
    cluster: KubeEmulator, prometheus: PrometheusSandbox, exporter: MetricsExporter, services: Any
) -> None:
    import aiohttp
    from prometheus_client.parser import text_string_to_metric_families

    set_load(exporter, 60, prometheus)
    cluster.create(deployment("web", 2))
    cluster.create(target("web", "web"))
    service = services("one", cluster, prometheus)
    await until(lambda: status_of(cluster, "web").get("currentReplicas") == 6, what="a scale-up")
    port = next(line["port"] for line in service.lines() if line.get("event") == "http.started")
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        async with session.get(f"{base}/healthz") as response:
            assert response.status == 200
        async with session.get(f"{base}/readyz") as response:
            body = await response.text()
            assert response.status == 200, body
        async with session.get(f"{base}/metrics") as response:
            text = await response.text()
        async with session.get(f"{base}/api/targets/default/web") as response:
            document = await response.json()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    web = (("name", "web"), ("namespace", "default"))
    assert samples[("autoscaler_target_final_replicas", web)] == 6
    # the per-pod average of 60 queued over the replicas the metric was last read with
    assert samples[("autoscaler_target_metric_value", (("metric", "queue_depth"), *web))] in (10, 30)
    assert samples[("autoscaler_target_metric_target", (("metric", "queue_depth"), *web))] == 10
    assert samples[("autoscaler_leader", ())] == 1
    assert samples[("autoscaler_targets", (("state", "active"),))] == 1
    assert any(
        name == "autoscaler_reconcile_duration_seconds_count" and value > 0 for (name, _), value in samples.items()
    )
    assert document["status"]["currentReplicas"] == 6
