"""F42: a watch that expires (410 Gone) every time it is opened must not become a LIST/WATCH hot loop.

Promise: the first 410 after a healthy watch relists at once (a compacted resourceVersion is normal);
410s in a row back off as client-go's reflector does (by default 0.8 s doubling to 30 s, each wait jittered
up to twice as long), so the LISTs over time stay within that schedule. Every relist is counted in
``autoscaler_cache_relists_total{resource, reason}``, and a cache that relists more than 5 times in a window
(by default 60 s) fails ``/readyz`` (``caches: … relisted …``) until it has followed the server for a window
again. The service here runs with a shorter backoff and window (``kubernetes.relists``), so the whole story
takes seconds rather than minutes: the schedule the LISTs are held to is the one those settings make.

Before the fix, every watch answered 410 made the pods cache relist at once, again and again: hundreds
of LISTs a second, the CPU of a core, and ``/readyz`` green throughout.
"""

from __future__ import annotations

import asyncio

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.relay import requests_matching
from tests.chaos.service import ServiceProcess, wait_until
from tests.chaos.world import condition, set_load, target
from tests.service.cluster import deployment

POD_WATCHES = requests_matching(r"/pods\?.*watch=true")
WATCHES = requests_matching(r"watch=true")

# The reflector's backoff, shortened (client-go's: 0.8 s doubling to 30 s); jitter 1.0 makes each wait 1–2
# times its step. At the cap, 6 relists (more than the limit of 5) take at most 5 waits of 2 × CAP: within
# the window, so the cache that never follows is reported whatever the jitter.
FIRST_STEP, CAP, WINDOW = 0.2, 1.0, 15.0
RELISTS = {"relists": {"backoffStartSeconds": FIRST_STEP, "backoffCapSeconds": CAP, "windowSeconds": WINDOW}}


def most_relists(seconds: float) -> int:
    """The most LISTs a cache can make in ``seconds`` of expiring watches under the backoff: one after
    the cut, one at once for the first 410, then one per wait (each at least its step)."""
    lists, elapsed, step = 2, 0.0, FIRST_STEP
    while elapsed + step <= seconds:
        elapsed += step
        lists += 1
        step = min(CAP, step * 2)
    return lists


async def caches_detail(service: ServiceProcess) -> tuple[bool, str]:
    ready, body = await service.ready()
    detail = next((c["detail"] for c in body.get("checks", []) if c["name"] == "caches"), "")
    return ready, detail


async def relists(service: ServiceProcess, **labels: str) -> float:
    return await service.metric("autoscaler_cache_relists_total", resource="pods", **labels) or 0.0


async def test_a_watch_that_always_expires_backs_off_and_fails_readiness(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """F42: every watch of pods answered 410 for as long as it takes /readyz to fail: the LISTs of pods
    stay within the backoff's schedule (failed before: ~200 LISTs a second, /readyz green), the metric
    counts each relist with its reason, /readyz names the cache; once the 410s stop, the cache follows
    the server again and /readyz passes."""
    await set_load(exporter, prometheus, 20)
    cluster.create(deployment("web", 2))
    cluster.create(target("web"))
    service = await chaos.service("one", kubernetes=RELISTS)
    await wait_until(
        lambda: condition(cluster, "web", "ScalingActive").get("status") == "True", what="the first decision"
    )
    await wait_until(lambda: len(service.relay.matching(WATCHES)) >= 3, what="the watches to be open")
    await wait_until(lambda: _ready(service), seconds=20, what="/readyz to pass")
    assert await relists(service, reason="expired") == 0

    loop = asyncio.get_running_loop()
    listed_before = cluster.requests.count("list", "pods")
    expiring = cluster.faults.expire_watches(resource="pods")
    began = loop.time()
    assert service.relay.cut(POD_WATCHES) >= 1  # the watch reopened after the cut meets the 410s

    # ~6 s of 410s, the backoff at its cap for most of them: the schedule's handful of LISTs, not a hot loop.
    await asyncio.sleep(6)
    elapsed = loop.time() - began
    listed = cluster.requests.count("list", "pods") - listed_before
    assert listed <= most_relists(elapsed) + 1, (listed, elapsed)  # +1: a LIST in flight at the cut
    await wait_until(lambda: _failing(service, "relist"), seconds=30, what="/readyz to report the relisting")
    _, detail = await caches_detail(service)
    assert "pods" in detail and "relisted" in detail and "410" in detail, detail
    assert len(detail) < 2048, detail
    elapsed = loop.time() - began
    listed = cluster.requests.count("list", "pods") - listed_before
    assert 6 <= listed <= most_relists(elapsed) + 1, (listed, elapsed)
    counted = await relists(service, reason="expired")
    assert listed - 2 <= counted <= listed, (counted, listed)  # one LIST may be in flight, one was the cut's
    assert await relists(service, reason="error") >= 1  # the relist after the cut itself
    assert expiring.fired >= 6
    await wait_until(lambda: service.events("watch relisting too often", resource="pods"), 10, "the log line")

    cluster.faults.remove(expiring)
    # The relist after the 410s stop (at most 2 × CAP later), then a whole window of following: sooner than
    # the default window of 60 s could end, so this also shows the service took the setting.
    await wait_until(lambda: _ready(service), seconds=WINDOW + 30, what="/readyz to pass once the 410s stop")
    assert await service.metric("autoscaler_cache_synced", resource="pods") == 1
    assert not service.tracebacks()


async def _ready(service: ServiceProcess) -> bool:
    ready, _ = await service.ready()
    return ready


async def _failing(service: ServiceProcess, word: str) -> bool:
    ready, detail = await caches_detail(service)
    return not ready and word in detail
