"""Leadership changing hands (D3, F14, F15): the decision history survives every handoff and restart,
and an instance that lost its Lease writes nothing.

The promise: a new leader (or a restarted one) restores each target's history from the status as it is
on the API server when it takes over — never from its own memory of an earlier term — so no scale-down
comes before the scale-down window, measured from the last high recommendation *any* leader made.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.relay import requests_matching
from tests.chaos.service import ServiceProcess, wait_until
from tests.chaos.timeline import Sample, Timeline
from tests.chaos.world import replicas_of, set_load, status_of, target
from tests.service.cluster import deployment

WINDOW = 12.0  # the scale-down stabilization window of these tests' targets
BEHAVIOR = {
    "scaleDown": {"stabilizationWindowSeconds": int(WINDOW)},
    "scaleUp": {"policies": [{"type": "Pods", "value": 10, "periodSeconds": 1}]},
}
# What an instance sends that changes the cluster, the Lease aside.
WRITES = requests_matching(r"^(POST|PUT|PATCH|DELETE) (?!.*/leases)")

NO_TAKEOVER_READ = "takeover: the target caches listed after this instance began to lead, no read again"


def leading(instance: ServiceProcess) -> bool:
    started, stopped = instance.events("leader.started"), instance.events("leader.stopped")
    return len(started) > len(stopped)


async def leader_of(instances: list[ServiceProcess], seconds: float = 30.0) -> ServiceProcess:
    found: list[ServiceProcess] = []

    def one_leads() -> bool:
        found[:] = [i for i in instances if i.alive() and leading(i)]
        return len(found) == 1

    await wait_until(one_leads, seconds, "one leader")
    return found[0]


async def synced(instance: ServiceProcess) -> None:
    await wait_until(lambda: instance.events("caches synced"), 30, f"{instance.name}'s caches")


async def scaled_down(timeline: Timeline, since: float) -> Sample:
    """The timeline's first sample below 8 replicas since ``since`` (waiting for the sampler to see it)."""
    found: list[Sample] = []

    def seen() -> bool:
        sample = timeline.first(lambda s: s.replicas is not None and s.replicas < 8, since=since)
        found[:] = [sample] if sample is not None else []
        return bool(found)

    await wait_until(seen, 5, "the timeline to show the scale-down")
    return found[0]


def recommendations(cluster: KubeEmulator, name: str) -> list[dict[str, Any]]:
    return list(((status_of(cluster, name).get("history") or {}).get("recommendations")) or [])


async def scaled_up(chaos: Chaos, exporter: MetricsExporter, prometheus: PrometheusSandbox) -> None:
    """web at 2 replicas with a status that says so, then the load of 8 pods, and 8 replicas."""
    await set_load(exporter, prometheus, 20)
    chaos.cluster.create(deployment("web", 2))
    chaos.cluster.create(target("web", behavior=BEHAVIOR, max_replicas=10))


async def test_d3_a_leader_again_restores_the_history_its_successor_wrote(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """D3 exactly: A leads, B takes over (A paused past its lease) and scales up, A resumes as a standby,
    the load drops, B dies and A leads again: A must hold B's 8 replicas for the window measured from
    B's last high recommendation. Before the fix A restored the history of its own first term and
    scaled 8 → 2 at once."""
    await scaled_up(chaos, exporter, prometheus)
    a = await chaos.service("a")
    assert await leader_of([a]) is a
    await wait_until(lambda: status_of(cluster, "web").get("desiredReplicas") == 2, 30, "A's first decision")
    # A cold start: A's caches listed once it led, so it did not read the targets again at takeover.
    assert len(a.events(NO_TAKEOVER_READ)) == 1
    b = await chaos.service("b")
    await synced(b)
    timeline = chaos.timeline("web")

    a.pause()  # past its lease: B takes over
    assert await leader_of([b], 30) is b
    await set_load(exporter, prometheus, 80)
    await wait_until(lambda: replicas_of(cluster, "web") == 8, 30, "B scales to 8")
    a.resume()
    await wait_until(lambda: a.events("leader.stopped"), 15, "A notices it lost the Lease")

    dropped = time.monotonic()
    await set_load(exporter, prometheus, 20)
    await wait_until(
        lambda: any(r.get("replicas") == 2 and r.get("ongoing") for r in recommendations(cluster, "web")),
        15,
        "B recommends 2 (held at 8 by the window)",
    )
    b.kill()
    assert await leader_of([a], 30) is a
    await wait_until(lambda: replicas_of(cluster, "web") == 2, 40, "A scales down after the window")

    # B's last recommendation of 8 came at the earliest one period before the load dropped.
    earliest = dropped - 1.0 + WINDOW
    down = await scaled_down(timeline, dropped)
    assert down.at >= earliest - 0.5, (
        f"A scaled down {down.at - dropped:.1f}s after the load dropped; the window is {WINDOW:g}s"
    )
    assert a.relay.requests(requests_matching(r"^PATCH .*/deployments/web/scale"), since=dropped), (
        "the scale-down was A's"
    )
    # Every later term read the statuses at takeover: B's (its caches listed while A led) and A's second.
    assert len(a.events(NO_TAKEOVER_READ)) == 1 and not b.events(NO_TAKEOVER_READ)
    assert not a.tracebacks() and not b.tracebacks()


async def test_d3_a_leader_back_from_a_partition_restores_the_history_from_the_server(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """D3 with a network partition instead of a pause: A's requests are cut and new connections reset,
    its watches held (frozen, as a partition does to an open stream), B takes over and scales up, the
    load drops, the partition heals and B dies at once: A leads again and must start from B's status,
    not from its memory of its own term. (Cutting the watches too needs the watch supervisor of D1:
    without it a cut watch ends its cache for good.)"""
    await scaled_up(chaos, exporter, prometheus)
    a = await chaos.service("a")
    assert await leader_of([a]) is a
    await wait_until(lambda: status_of(cluster, "web").get("desiredReplicas") == 2, 30, "A's first decision")
    b = await chaos.service("b")
    await synced(b)
    timeline = chaos.timeline("web")

    watches = requests_matching("watch=true")
    a.relay.reset_new(True)
    a.relay.freeze(watches)
    a.relay.cut(lambda request: not watches(request))
    await wait_until(lambda: leading(b), 30, "B takes over")
    await set_load(exporter, prometheus, 80)
    await wait_until(lambda: replicas_of(cluster, "web") == 8, 30, "B scales to 8")
    await wait_until(lambda: a.events("leader.stopped"), 15, "A steps down")
    dropped = time.monotonic()
    await set_load(exporter, prometheus, 20)
    await wait_until(
        lambda: any(r.get("replicas") == 2 and r.get("ongoing") for r in recommendations(cluster, "web")),
        15,
        "B recommends 2 (held at 8 by the window)",
    )
    a.relay.reset_new(False)
    a.relay.thaw()
    b.kill()
    await wait_until(lambda: leading(a), 30, "A leads again")
    await wait_until(lambda: replicas_of(cluster, "web") == 2, 40, "A scales down after the window")
    down = await scaled_down(timeline, dropped)
    assert down.at >= dropped - 1.0 + WINDOW - 0.5, (
        f"A scaled down {down.at - dropped:.1f}s after the load dropped; the window is {WINDOW:g}s"
    )
    assert not a.tracebacks() and not b.tracebacks()


async def test_d3_any_number_of_handoffs_keep_the_history(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Three instances; the load drops and two leaders die one after the other: each new leader holds
    the replicas until the window measured from the last high recommendation, whoever made it. Before
    the fix each standby restored the status it read when it started (2 replicas) and scaled down at once."""
    await scaled_up(chaos, exporter, prometheus)
    instances = [await chaos.service("a")]
    first = await leader_of(instances)
    await wait_until(lambda: status_of(cluster, "web").get("desiredReplicas") == 2, 30, "the first decision")
    instances += [await chaos.service("b"), await chaos.service("c")]
    for instance in instances[1:]:
        await synced(instance)
    timeline = chaos.timeline("web")
    await set_load(exporter, prometheus, 80)
    await wait_until(lambda: replicas_of(cluster, "web") == 8, 30, "the leader scales to 8")

    dropped = time.monotonic()
    await set_load(exporter, prometheus, 20)
    leader = first
    for _ in range(2):
        leader.kill()
        leader = await leader_of(instances, 30)
    await wait_until(lambda: replicas_of(cluster, "web") == 2, 40, "the last leader scales down after the window")

    earliest = dropped - 1.0 + WINDOW
    down = await scaled_down(timeline, dropped)
    assert down.at >= earliest - 0.5, (
        f"scaled down {down.at - dropped:.1f}s after the load dropped; the window is {WINDOW:g}s"
    )
    assert leader.relay.requests(requests_matching(r"^PATCH .*/deployments/web/scale"), since=dropped)
    assert not any(i.tracebacks() for i in instances)


async def test_f14_a_restart_mid_stabilization_does_not_scale_down_early(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """The only instance is killed 3 s into a 12 s scale-down window and started again: the restarted
    process restores the window from the status and holds 8 replicas until it has passed. Already held
    before this work (the status carries the history); the test proves it."""
    await scaled_up(chaos, exporter, prometheus)
    first = await chaos.service("a")
    await leader_of([first])
    timeline = chaos.timeline("web")
    await set_load(exporter, prometheus, 80)
    await wait_until(lambda: replicas_of(cluster, "web") == 8, 30, "8 replicas")
    dropped = time.monotonic()
    await set_load(exporter, prometheus, 20)
    await wait_until(
        lambda: any(r.get("replicas") == 2 and r.get("ongoing") for r in recommendations(cluster, "web")),
        15,
        "a recommendation of 2 (held at 8 by the window)",
    )
    first.kill()
    second = await chaos.service("a-restarted")
    await leader_of([second], 30)
    await wait_until(lambda: replicas_of(cluster, "web") == 2, 40, "the scale-down after the window")
    down = await scaled_down(timeline, dropped)
    assert down.at >= dropped - 1.0 + WINDOW - 0.5, (
        f"scaled down {down.at - dropped:.1f}s after the load dropped; the window is {WINDOW:g}s"
    )
    assert not second.tracebacks()


async def test_f15_a_killed_leader_is_replaced_within_the_lease(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """SIGKILL of the leader: the standby leads within leaseDuration (3 s) + a retry period with jitter
    (0.5 × 2.2 s) + its first sync (1 s), and decides. Already held before this work."""
    await scaled_up(chaos, exporter, prometheus)
    a = await chaos.service("a")
    await leader_of([a])
    b = await chaos.service("b")
    await synced(b)
    a.kill()
    killed = time.monotonic()
    await set_load(exporter, prometheus, 40)
    await wait_until(lambda: replicas_of(cluster, "web") == 4, 30, "the new leader's first scale")
    took = time.monotonic() - killed
    assert leading(b)
    assert b.relay.requests(requests_matching(r"^PATCH .*/deployments/web/scale"), since=killed)
    # the lease, a retry period with jitter, a sync period, Prometheus' scrape of the new load, margin
    assert took <= 3 + 0.5 * 2.2 + 1 + 2 + 4, f"the new leader's first scale came {took:.1f}s after the kill"


async def test_f15_a_paused_leader_writes_nothing_after_its_lease_ran_out(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """A leads, and is frozen (SIGSTOP) just as the load rises: B takes over and scales. A resumed
    (SIGCONT) finds its reconciler overdue with a decision to make — and writes nothing: no scale, no
    status, no Event (checked on A's own connections), while B's writes go on. No double actuation.
    Already held before this work (a write is fenced on the lease's deadline, read from the clock)."""
    await scaled_up(chaos, exporter, prometheus)
    a = await chaos.service("a")
    await leader_of([a])
    await wait_until(lambda: status_of(cluster, "web").get("desiredReplicas") == 2, 30, "A's first decision")
    b = await chaos.service("b")
    await synced(b)
    exporter.set("queue_depth", {"queue": "jobs"}, 80)  # Prometheus scrapes it within a second
    a.pause()
    paused = time.monotonic()
    await wait_until(lambda: leading(b), 30, "B takes over")
    await wait_until(lambda: replicas_of(cluster, "web") == 8, 30, "B scales to 8")
    await set_load(exporter, prometheus, 120)
    a.resume()
    await wait_until(lambda: a.events("leader.stopped"), 15, "A notices it lost the Lease")
    await wait_until(lambda: replicas_of(cluster, "web") == 10, 30, "B scales on")
    await asyncio.sleep(2)
    renew_deadline = 2.0
    assert not a.relay.requests(WRITES, since=paused + renew_deadline), (
        f"A wrote after its lease ran out: {a.relay.requests(WRITES, since=paused + renew_deadline)}"
    )
    scale_writes = [line for _, line in b.relay.requests(requests_matching(r"^PATCH .*/scale"), since=paused)]
    assert scale_writes, "B did the scaling"
    assert not a.tracebacks() and not b.tracebacks()
