"""HVPA's vertical path fails in isolation (F17): without the VPA CRD, or with every VPA patch rejected,
the horizontal scaling goes on; a rejected VPA patch is an Event and backs off on its own, without
holding back the target's scale and status writes."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.relay import requests_matching
from tests.chaos.service import wait_until
from tests.chaos.world import replicas_of, set_load, target
from tests.service.cluster import VPA_CRD, deployment, vpa

VPA_WRITES = requests_matching(r"^PATCH .*/verticalpodautoscalers/web")


def hvpa_target() -> dict[str, Any]:
    obj = target(
        "web", max_replicas=10, behavior={"scaleUp": {"policies": [{"type": "Pods", "value": 10, "periodSeconds": 1}]}}
    )
    obj["spec"]["hvpa"] = {
        "scalingIntervals": [{"maxReplicas": 10, "maxResources": {"cpu": "500m", "memory": "1Gi"}}],
        "containers": [{"name": "app"}],
    }
    return obj


def web_vpa() -> dict[str, Any]:
    obj = vpa("web", "web", cpu="400m", memory="256Mi")
    obj["spec"]["resourcePolicy"]["containerPolicies"][0]["containerName"] = "app"
    obj["status"]["recommendation"]["containerRecommendations"][0]["containerName"] = "app"
    return obj


async def test_f17_without_the_vpa_crd_hvpa_still_scales_horizontally(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """No VPA CRD on the server at all: the VPA watch treats it as empty, HVPA decides from its HPA source,
    and the replicas follow the load. Already held before this work."""
    await set_load(exporter, prometheus, 20)
    cluster.create(deployment("web", 2))
    cluster.create(hvpa_target())
    instance = await chaos.service("a")
    await set_load(exporter, prometheus, 40)
    await wait_until(lambda: replicas_of(cluster, "web") == 4, 30, "HVPA scales out without any VPA")
    assert instance.alive() and not instance.tracebacks()


async def test_f17_a_rejected_vpa_patch_backs_off_alone_and_scaling_goes_on(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Every VPA patch answered 422 (an admission webhook refusing it): an Event FailedUpdateVPA, the VPA
    patches thin out (1, 2, 4… periods: before this work one every period), the horizontal scaling
    follows the load all the while, and the scale/status writes never back off."""
    cluster.install_crd(VPA_CRD)
    await set_load(exporter, prometheus, 20)
    cluster.create(deployment("web", 2))
    cluster.seed(web_vpa())
    rule = cluster.faults.error(
        422,
        verb="patch",
        resource="verticalpodautoscalers",
        message='admission webhook "vpa.example.com" denied the request',
    )
    cluster.create(hvpa_target())
    instance = await chaos.service("a")
    started = time.monotonic()
    await set_load(exporter, prometheus, 40)
    await wait_until(lambda: replicas_of(cluster, "web") == 4, 30, "horizontal scaling despite the VPA")
    await wait_until(
        lambda: cluster.events("default", involved_name="web", reason="FailedUpdateVPA"), 15, "an Event about the VPA"
    )
    await set_load(exporter, prometheus, 60)
    await wait_until(lambda: replicas_of(cluster, "web") == 6, 30, "horizontal scaling goes on")
    await asyncio.sleep(max(0.0, started + 14 - time.monotonic()))
    patches = instance.relay.requests(VPA_WRITES, since=started)
    assert 2 <= len(patches) <= 6, f"{len(patches)} VPA patches in 14 s of rejections"
    event = cluster.events("default", involved_name="web", reason="FailedUpdateVPA")[-1]
    assert "denied the request" in event["message"] and "next attempt in" in event["message"]
    assert not instance.events("write failed: backing off"), "the horizontal path never backed off"
    assert (
        await instance.metric("autoscaler_target_write_backoff_seconds", namespace="default", name="web", path="vpa")
        or 0
    ) > 0
    cluster.faults.remove(rule)

    def pinned() -> bool:
        obj = cluster.get("verticalpodautoscalers.autoscaling.k8s.io", "web") or {}
        policies = ((obj.get("spec") or {}).get("resourcePolicy") or {}).get("containerPolicies") or [{}]
        return "minAllowed" in policies[0]

    await wait_until(pinned, 30, "the VPA pinned once patches are accepted")
    assert instance.alive() and not instance.tracebacks()
