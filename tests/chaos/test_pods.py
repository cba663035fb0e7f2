"""F12: pod churn — a rolling update and crash-looping pods under a CPU Utilization target.

Promise: pods that are starting (not ready, or ready only just now) and their CPU burst are set aside by
the HPA's readiness rules, and pods without samples yet dampen the change; the replica count does not
move while the workload's pods turn over, and nothing flaps.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from datetime import datetime

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from kube_emulator.kubelet import is_ready
from tests.chaos.conftest import Chaos
from tests.chaos.service import wait_until
from tests.chaos.world import condition, status_of, target
from tests.service.cluster import deployment

CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}
STEADY = 0.25  # cores: 50 % of the 500m request, under the 60 % target (4 pods stay 4: ceil(4 × 50/60))
STARTING = 1.0  # cores: what a pod burns while it starts (JIT, caches): 200 % of its request


@contextlib.asynccontextmanager
async def cpu_feeder(cluster: KubeEmulator, exporter: MetricsExporter, app: str) -> AsyncIterator[None]:
    """Export each pod's cAdvisor CPU counter, as a kubelet would: a starting pod burns STARTING, a ready
    one STEADY; the series of a pod that is gone disappears."""

    async def feed() -> None:
        counters: dict[str, tuple[float, float]] = {}  # pod -> (cores, origin): the counter is cores × (t − origin)
        while True:
            now = time.time()
            pods = {
                p["metadata"]["name"]: p
                for p in cluster.list("pods", "default", label_selector=f"app={app}")
                if (p.get("status") or {}).get("phase") == "Running"
            }
            for name, pod in pods.items():
                cores = STEADY if is_ready(pod) else STARTING
                previous = counters.get(name)
                if previous is not None and previous[0] == cores:
                    continue
                # A counter never goes back: a new rate continues from the value reached so far.
                value = previous[0] * (now - previous[1]) if previous is not None else 3600 * cores
                counters[name] = (cores, now - value / cores)
                exporter.set_rate(
                    "container_cpu_usage_seconds_total",
                    {"namespace": "default", "pod": name, "container": "app"},
                    cores,
                    origin=counters[name][1],
                )
            for name in counters.keys() - pods.keys():
                del counters[name]
                exporter.remove(
                    "container_cpu_usage_seconds_total", {"namespace": "default", "pod": name, "container": "app"}
                )
            await asyncio.sleep(0.2)

    task = asyncio.create_task(feed())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def workload_controller(cluster: KubeEmulator) -> WorkloadController:
    return next(c for c in cluster.controllers if isinstance(c, WorkloadController))


def settled(cluster: KubeEmulator, replicas: int) -> bool:
    pods = cluster.list("pods", "default", label_selector="app=web")
    return len(pods) == replicas and all(is_ready(p) for p in pods)


async def past_the_rate_window(cluster: KubeEmulator, window: float) -> None:
    """Wait until every pod has been ready, and its CPU series steady, for longer than one rate window.

    Two of upstream's rules make a fresh target's first decisions depend on this. Inside its CPU
    initialization period a pod's sample counts only once a whole window was collected after it became
    ready (groupPods): pods that turned ready a moment apart would be counted 3 ready of 4 for a sync or
    two, and ceil(0.83 × 3) = 3. And ``rate()`` over a window that began before a pod's series did, or
    before its burst ended, is not its steady rate. A target has no stabilization history yet to hold 4."""
    ready_at = max(
        datetime.fromisoformat(c["lastTransitionTime"]).timestamp()
        for p in cluster.list("pods", "default", label_selector="app=web")
        for c in p["status"]["conditions"]
        if c["type"] == "Ready"
    )
    # + 2 s: lastTransitionTime is cut to the second, and the feeder notices readiness within its 0.2 s poll.
    await asyncio.sleep(max(0.0, ready_at + window + 2.0 - time.time()))


async def test_a_rolling_update_and_crash_looping_pods_do_not_move_the_count(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Holds with the engine as it is (upstream's readiness rules); this proves it on a live service."""
    workload_controller(cluster).lifecycle = PodLifecycle(ready_delay=3.0)  # a new pod is unready for 3 s
    async with cpu_feeder(cluster, exporter, "web"):  # a pod's series starts with the pod, as cAdvisor's does
        cluster.create(deployment("web", 4, cpu="500m"))
        await wait_until(lambda: settled(cluster, 4), what="four ready pods")
        await past_the_rate_window(cluster, 10.0)  # the service's cpuRateWindow below
        cluster.create(target("web", metrics=[CPU], max_replicas=12))
        await chaos.service(
            "one",
            prometheus={"cpuRateWindow": "10s"},
            controller={"cpuInitializationPeriodSeconds": 20, "initialReadinessDelaySeconds": 5},
        )
        timeline = chaos.timeline("web")
        await wait_until(
            lambda: (
                condition(cluster, "web", "ScalingActive").get("status") == "True"
                and status_of(cluster, "web").get("desiredReplicas") == 4
            ),
            seconds=30,
            what="a steady decision of 4",
        )
        since = time.monotonic()  # the timeline's clock; its last sample may predate the write just seen

        # A rolling update: four new pods start (burning 200 % while unready), then the old ones go.
        cluster.patch("deployments", "web", {"spec": {"template": {"metadata": {"annotations": {"rev": "2"}}}}})
        await asyncio.sleep(1)
        await wait_until(lambda: settled(cluster, 4), seconds=30, what="the rollout to finish")
        # Crash loops: pods die and come back (unready and bursting) twice.
        for _ in range(2):
            for pod in cluster.list("pods", "default", label_selector="app=web")[:2]:
                cluster.delete("pods", pod["metadata"]["name"], "default")
            await asyncio.sleep(1)
            await wait_until(lambda: settled(cluster, 4), seconds=30, what="the pods to come back")
        await asyncio.sleep(3)  # a few more syncs on the settled pods

    assert timeline.replicas_between(since) == {4}, timeline.describe()
    desired = {s.desired for s in timeline.between(since)}
    assert desired <= {4}, timeline.describe()
