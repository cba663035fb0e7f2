"""D1, F11: the watch caches under real connection faults between the service and the API server.

Promise: a cache never stops following the server silently. A watch cut mid-body or reset is relisted
within the backoff (0.8–1.6 s for a first failure); a frozen watch within ``kubernetes.watchSilenceSeconds``
(3 s here, against the emulator's 1 s bookmarks) plus the backoff. Each incident is logged once
(``watch failed`` … ``watch recovered``). Meanwhile the targets that depend on the cache make no decision
and no write; ``autoscaler_cache_stale_seconds`` shows the staleness, and ``/readyz`` fails once it passes
two sync periods.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.relay import requests_matching
from tests.chaos.service import ServiceProcess, wait_until
from tests.chaos.world import condition, kubectl, replicas_of, set_load, status_of, target
from tests.service.cluster import deployment

WATCHES = requests_matching(r"watch=true")
FAST_SILENCE = {"kubernetes": {"watchSilenceSeconds": 3}}


async def started(chaos: Chaos, cluster: KubeEmulator, **overrides: Any) -> ServiceProcess:
    cluster.create(deployment("web", 2))
    cluster.create(target("web"))
    service = await chaos.service("one", **overrides)
    await wait_until(
        lambda: condition(cluster, "web", "ScalingActive").get("status") == "True", what="the first decision"
    )
    await wait_until(lambda: len(service.relay.matching(WATCHES)) >= 3, what="the watches to be open")
    return service


async def test_an_abrupt_cut_of_every_watch_is_recovered(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    """D1: failed before the supervisor (the cut ended every cache task silently; the new target was
    never reconciled)."""
    await set_load(exporter, prometheus, 20)
    service = await started(chaos, cluster)

    assert service.relay.cut(WATCHES) >= 3  # an API-server restart, seen from the client: RST mid-body

    # A target created after the cut is reconciled …
    cluster.create(deployment("late", 1))
    cluster.create(target("late"))
    await wait_until(lambda: replicas_of(cluster, "late") == 2, seconds=20, what="the new target to scale")
    # … and a replica count another client sets is seen: the service decides from 7, then scales back
    # down to 2 after the 4 s window.
    await kubectl(cluster, tmp_path, "scale", "deployment/web", "--replicas=7")
    await wait_until(
        lambda: status_of(cluster, "web").get("currentReplicas") == 7,
        seconds=20,
        what="the status to show the new count",
    )
    await wait_until(lambda: replicas_of(cluster, "web") == 2, seconds=30, what="the scale back down")
    failed = service.events("watch failed")
    recovered = service.events("watch recovered")
    assert {line["resource"] for line in failed} >= {"pods", "deployments.apps", "scalingtargets.autoscaler.dev"}
    assert len(failed) == len(recovered) == len({line["resource"] for line in failed})  # once per incident
    assert not service.tracebacks()


async def test_a_frozen_watch_is_noticed_and_relisted(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    """D1 (frozen): failed before (a watch that stays open and silent was trusted for its 5–10 min).
    While frozen the service cannot see that another client set 10 replicas; within the silence bound
    it notices, relists, reports the staleness, and then decides from 10."""
    await set_load(exporter, prometheus, 20)
    service = await started(chaos, cluster, **FAST_SILENCE)
    await asyncio.sleep(2)  # the emulator has bookmarked the idle watches (every 1 s)
    service.relay.freeze(WATCHES)  # every watch, open or reopened, goes silent
    frozen = asyncio.get_running_loop().time()
    await kubectl(cluster, tmp_path, "scale", "deployment/web", "--replicas=10")
    await wait_until(
        lambda: status_of(cluster, "web").get("currentReplicas") == 10,
        seconds=20,
        what="the relist to show 10 replicas",
    )
    noticed = asyncio.get_running_loop().time() - frozen
    assert noticed < 3 + 1.6 + 1 + 2, noticed  # silence bound + backoff + a sync period + margin
    await wait_until(lambda: service.events("watch failed", resource="deployments.apps"), 5, "the watch failure logged")
    assert (await service.metric("autoscaler_cache_watch_failures_total", resource="deployments.apps") or 0) >= 1
    service.relay.thaw()
    await wait_until(lambda: replicas_of(cluster, "web") == 2, seconds=30, what="the scale back down from 10")
    assert not service.tracebacks()


async def test_an_unreachable_api_pauses_decisions_and_readiness(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """F11/F9: the API goes away (every connection reset, new ones refused). No write happens from the
    stale state although the load changes; the staleness shows in /readyz and in the metric; when the
    API is back the service follows it again and acts on the new load, without a restart."""
    await set_load(exporter, prometheus, 20)
    service = await started(chaos, cluster, **FAST_SILENCE)
    service.relay.reset_new(True)
    service.relay.cut()
    await set_load(exporter, prometheus, 60)  # would scale to 6
    await wait_until(lambda: service.events("watch failed"), what="the incident to be logged")
    await wait_until(lambda: _not_ready(service), seconds=10, what="/readyz to fail")
    _, body = await service.ready()
    detail = next(c["detail"] for c in body["checks"] if c["name"] == "caches")
    assert "not following the API server" in detail
    # the stalest cache passed the 2 s readiness bound (which cache, depends on when each one's watch broke)
    samples = await service.metrics()
    assert max(v for (name, _), v in samples.items() if name == "autoscaler_cache_stale_seconds") > 2
    assert min(v for (name, _), v in samples.items() if name == "autoscaler_cache_synced") == 0
    assert replicas_of(cluster, "web") == 2  # no write reached the server (none could)
    service.relay.reset_new(False)
    await wait_until(lambda: replicas_of(cluster, "web") == 6, seconds=40, what="the scale-up after recovery")
    await wait_until(lambda: service.ready(), seconds=10, what="/readyz to pass again")
    assert await service.metric("autoscaler_cache_stale_seconds", resource="pods") == 0
    assert await service.metric("autoscaler_cache_synced", resource="pods") == 1
    await wait_until(lambda: service.events("watch recovered"), 5, "the recovery logged")
    assert not service.tracebacks()


async def _not_ready(service: ServiceProcess) -> bool:
    ready, _ = await service.ready()
    return not ready


async def test_a_slow_api_is_only_slow(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Every byte to and from the API 150 ms late: decisions go on, nothing is reported broken."""
    await set_load(exporter, prometheus, 20)
    service = await started(chaos, cluster, **FAST_SILENCE)
    service.relay.slow(0.15)
    await set_load(exporter, prometheus, 50)
    await wait_until(lambda: replicas_of(cluster, "web") == 5, seconds=30, what="the scale-up over a slow link")
    assert not service.events("watch failed")
    assert (await service.ready())[0]


async def test_an_expired_watch_relists_at_once(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    """410 Gone on a watch (a compacted resourceVersion): relist at once, not an incident."""
    await set_load(exporter, prometheus, 20)
    service = await started(chaos, cluster, **FAST_SILENCE)
    cluster.faults.expire_watches(resource="deployments", times=1)
    service.relay.cut(requests_matching(r"/deployments\?.*watch=true"))  # the re-watch meets the 410
    await wait_until(
        lambda: service.events("watch expired, relisting", resource="deployments.apps"), what="the relist after 410"
    )
    await kubectl(cluster, tmp_path, "scale", "deployment/web", "--replicas=5")
    await wait_until(lambda: status_of(cluster, "web").get("currentReplicas") == 5, what="the change seen")


async def test_a_huge_event_and_a_pathological_object_do_not_stop_the_cache(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    """An event line of 300 KiB (a pod with a big annotation: aiohttp's line reader stops at 128 KiB) and
    a ScalingTarget whose spec.hvpa nests 1,500 levels (the CRD keeps unknown fields there; the API
    server accepts 10,000; orjson stops at 1,024, Python's json at ~1,000): failed before (LineTooLong and
    RecursionError ended the caches). Now the caches follow on; the deep target is reported invalid with
    the path of the problem, and the other target goes on."""
    await set_load(exporter, prometheus, 20)
    service = await started(chaos, cluster, **FAST_SILENCE)
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "big", "namespace": "default", "annotations": {"note": "x" * 300_000}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
    )
    deep: Any = 1
    for _ in range(1500):
        deep = {"a": deep}
    bad = target("deep", "web")
    bad["spec"]["hvpa"] = {"unknown": deep}
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # the in-process emulator copies objects recursively; a real server would not
    try:
        cluster.create(bad)
        await wait_until(
            lambda: condition(cluster, "deep", "ScalingActive").get("reason") == "InvalidSpec",
            seconds=20,
            what="the deep target to be reported invalid",
        )
        message = condition(cluster, "deep", "ScalingActive")["message"]
        assert "spec.hvpa.unknown.a.a" in message and "nested too deeply" in message, message
        await kubectl(cluster, tmp_path, "scale", "deployment/web", "--replicas=4")
        await wait_until(lambda: status_of(cluster, "web").get("currentReplicas") == 4, what="the caches to follow")
        assert not service.events("watch failed")
        assert not service.tracebacks()
    finally:
        cluster.delete("scalingtargets.autoscaler.dev", "deep")
        sys.setrecursionlimit(limit)
