"""Label sharding with real ``autoscaler run`` processes (docs/sharding.md): each shard has its own leader
and standby, a shard's failover leaves the others alone, a target moves between shards by a label change,
and no target is ever written by two instances.

Who wrote what is read from each instance's own relay (every request line it sent, with its moment): the
writes of a target are its scale subresource PATCHes and its status PATCHes. Events name no target in
their request line and are left out.
"""

from __future__ import annotations

import itertools
import re
import time
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.relay import requests_matching
from tests.chaos.service import ServiceProcess, wait_until
from tests.chaos.timeline import Sample
from tests.chaos.world import kubectl, queue_metric, replicas_of, set_load, status_of, target
from tests.service.cluster import deployment

KEY = "autoscaler.dev/shard"
PERIOD = 1.0  # the chaos suite's sync period
LEASE = 3.0  # its lease duration; a standby polls every 0.5 s × (1 … 2.2)
POLL = 0.5 * 2.2
WINDOW = 12.0  # the scale-down stabilization window of the moved target
BEHAVIOR = {
    "scaleDown": {"stabilizationWindowSeconds": int(WINDOW)},
    "scaleUp": {"policies": [{"type": "Pods", "value": 10, "periodSeconds": 1}]},
}


def leading(instance: ServiceProcess) -> bool:
    return len(instance.events("leader.started")) > len(instance.events("leader.stopped"))


def writes(instances: list[ServiceProcess], name: str, since: float = 0.0) -> list[tuple[float, str]]:
    """(moment, instance) of every write of target ``name`` (its scale, its status), in order."""
    pattern = requests_matching(rf"^PATCH \S*/(scalingtargets/{re.escape(name)}/status|deployments/{name}/scale)\b")
    return sorted((at, i.name) for i in instances for at, _ in i.relay.requests(pattern, since=since))


def writers(instances: list[ServiceProcess], name: str) -> list[str]:
    """The instances that wrote ``name``, one entry per unbroken run of writes: ["a1", "a2"] is a handoff,
    ["a1", "a2", "a1"] two writers."""
    runs: list[str] = []
    for _, who in writes(instances, name):
        if not runs or runs[-1] != who:
            runs.append(who)
    return runs


def target_selectors(instance: ServiceProcess) -> set[str]:
    """The labelSelector of every LIST and WATCH of ScalingTargets the instance sent."""
    found = set()
    for _, line in instance.relay.requests(requests_matching(r"^GET \S*/scalingtargets\?")):
        query = parse_qs(urlsplit(line.split(" ")[1]).query)
        found.add(",".join(query.get("labelSelector", ["(none)"])))
    return found


def sync_times(instance: ServiceProcess, name: str) -> list[float]:
    """Unix times of the instance's syncs of ``name`` that decided (its "decision" lines, at debug level when
    nothing changed: these instances log at debug)."""
    return [
        datetime.fromisoformat(line["timestamp"]).timestamp()
        for line in instance.events("decision")
        if line.get("name") == name and isinstance(line.get("timestamp"), str)
    ]


def shard_target(name: str, shard: str | None, queue: str, **options: Any) -> dict[str, Any]:
    metric = queue_metric(f'sum(queue_depth{{queue="{queue}"}})')
    return target(name, metrics=[metric], labels={KEY: shard} if shard else None, **options)


async def test_a_shards_leader_killed_hands_its_targets_to_its_standby_alone(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Shards a and b with a leader and a standby each, and an unsharded instance for the unlabelled target.
    SIGKILL of a's leader: a's standby reconciles a's target within the lease plus a poll and a period; b's
    leader and the unsharded one never change and b's target keeps its cadence; every target is written by
    one instance at a time."""
    for queue in ("a", "b", "u"):
        await set_load(exporter, prometheus, 20, {"queue": queue})
    for name, shard in (("web-a", "a"), ("web-b", "b"), ("web-u", None)):
        cluster.create(deployment(name, 2))
        cluster.create(shard_target(name, shard, shard or "u", max_replicas=10))
    debug = {"logging": {"level": "debug"}}
    a1 = await chaos.service("a1", sharding={"shard": "a"}, **debug)
    b1 = await chaos.service("b1", sharding={"shard": "b"}, **debug)
    u = await chaos.service("u", **debug)
    await wait_until(lambda: leading(a1) and leading(b1) and leading(u), 60, "a leader for each shard")
    a2 = await chaos.service("a2", sharding={"shard": "a"}, **debug)
    b2 = await chaos.service("b2", sharding={"shard": "b"}, **debug)
    everyone = [a1, a2, b1, b2, u]
    await wait_until(lambda: a2.events("caches synced") and b2.events("caches synced"), 60, "the standbys' caches")
    await wait_until(
        lambda: [status_of(cluster, n).get("shard") for n in ("web-a", "web-b", "web-u")] == ["a", "b", None],
        30,
        "each target's first status, written by its shard",
    )
    assert not leading(a2) and not leading(b2)
    # Each instance lists and watches its own shard's targets only: the API server filters.
    assert {i.name: target_selectors(i) for i in everyone} == {
        "a1": {f"{KEY}=a"},
        "a2": {f"{KEY}=a"},
        "b1": {f"{KEY}=b"},
        "b2": {f"{KEY}=b"},
        "u": {f"!{KEY}"},
    }
    for instance in everyone:
        started = instance.events("service starting")
        assert (
            started
            and started[0].get("shard") == {"a1": "a", "a2": "a", "b1": "b", "b2": "b", "u": None}[instance.name]
        )
    assert await a1.metric("autoscaler_shard_info", shard="a", label_key=KEY) == 1
    assert await u.metric("autoscaler_shard_info", shard="", label_key=KEY) == 1

    a1.kill()
    killed, killed_wall = time.monotonic(), time.time()
    await wait_until(lambda: [t for t in sync_times(a2, "web-a") if t > killed_wall], 30, "a2 reconciles web-a")
    took = min(t for t in sync_times(a2, "web-a") if t > killed_wall) - killed_wall
    assert leading(a2)
    # The lease (from a1's last renewal, at most a retry period before the kill), a jittered poll, the first
    # tick of the target's namespace (at most a period), and a second for a loaded machine.
    assert took <= LEASE + POLL + PERIOD + 1.0, f"a2's first sync of web-a came {took:.1f}s after the kill"
    await set_load(exporter, prometheus, 40, {"queue": "a"})
    await wait_until(lambda: replicas_of(cluster, "web-a") == 4, 30, "a2 scales web-a")
    await set_load(exporter, prometheus, 30, {"queue": "b"})
    await wait_until(lambda: replicas_of(cluster, "web-b") == 3, 30, "b1 scales web-b")
    ended_wall = time.time()

    # Shard b and the unsharded instance never noticed: the same leaders, no standby promoted, and b's target
    # synced every period through a's failover.
    for leader, standby in ((b1, b2), (u, None)):
        assert len(leader.events("leader.started")) == 1 and not leader.events("leader.stopped"), leader.name
        assert standby is None or not standby.events("leader.started")
    during = [t for t in sync_times(b1, "web-b") if killed_wall - 2 * PERIOD <= t <= ended_wall]
    gaps = [later - earlier for earlier, later in itertools.pairwise(during)]
    assert len(during) >= (ended_wall - killed_wall) / PERIOD * 0.7 and max(gaps) < 2.5 * PERIOD, (
        f"web-b's syncs during a's failover: {len(during)}, gaps up to {max(gaps):.2f}s"
    )
    # One writer at a time per target: a1 then a2 for web-a, b1 alone for web-b, u alone for web-u.
    assert writers(everyone, "web-a") == ["a1", "a2"]
    assert writers(everyone, "web-b") == ["b1"]
    assert writers(everyone, "web-u") == ["u"]
    assert not writes([a1], "web-a", since=killed)
    assert not any(i.tracebacks() for i in everyone)


async def test_a_relabelled_target_moves_to_the_other_shard_with_its_history(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """web is at 8 replicas on shard a, the load drops (a recommends 2, held by the 12 s window), and
    `kubectl label st web autoscaler.dev/shard=b --overwrite` moves it while both shards keep syncing
    their other targets: b writes it within two periods, a never writes it again after b's first write,
    and b scales down only once the window that started on a has passed."""
    await set_load(exporter, prometheus, 20, {"queue": "web"})
    await set_load(exporter, prometheus, 30, {"queue": "other"})
    cluster.create(deployment("web", 2))
    cluster.create(shard_target("web", "a", "web", behavior=BEHAVIOR, max_replicas=10))
    for name, shard in (("other-a", "a"), ("other-b", "b")):
        cluster.create(deployment(name, 2))
        cluster.create(shard_target(name, shard, "other", max_replicas=10))
    a = await chaos.service("a", sharding={"shard": "a"})
    b = await chaos.service("b", sharding={"shard": "b"})
    await wait_until(lambda: leading(a) and leading(b), 60, "both shards lead")
    timeline = chaos.timeline("web")
    await set_load(exporter, prometheus, 80, {"queue": "web"})
    await wait_until(lambda: replicas_of(cluster, "web") == 8, 30, "a scales web to 8")

    dropped = time.monotonic()
    await set_load(exporter, prometheus, 20, {"queue": "web"})
    await wait_until(
        lambda: any(r.get("replicas") == 2 and r.get("ongoing") for r in recommendations(cluster, "web")),
        15,
        "a recommends 2 (held at 8 by the window)",
    )
    await kubectl(cluster, chaos.workdir, "label", "st", "web", f"{KEY}=b", "--overwrite", "-n", "default")
    relabel = [r for r in cluster.requests.find("patch", "scalingtargets") if r.info.name == "web"]
    assert len(relabel) == 1
    moved = relabel[0].started

    await wait_until(lambda: writes([b], "web"), 10, "b's first write of web")
    first = writes([b], "web")[0][0]
    assert first - moved <= 2 * PERIOD + 1.0, f"b wrote web {first - moved:.1f}s after the move"
    await wait_until(lambda: status_of(cluster, "web").get("shard") == "b", 10, "web's status names shard b")
    await wait_until(lambda: replicas_of(cluster, "web") == 2, 40, "b scales down after the window")
    down = await scaled_down(timeline, dropped)
    # a's last recommendation of 8 came at the earliest one period before the load dropped.
    assert down.at >= dropped - PERIOD + WINDOW - 0.5, (
        f"web scaled down {down.at - dropped:.1f}s after the load dropped; the window is {WINDOW:g}s"
    )
    assert writes([b], "web", since=down.at - 2.0), "the scale-down was b's"
    assert not writes([a], "web", since=first), f"a wrote web after b's first write: {writes([a], 'web', first)}"
    assert writers([a, b], "web") == ["a", "b"]
    assert writers([a, b], "other-a") == ["a"] and writers([a, b], "other-b") == ["b"]
    assert any(line.get("name") == "web" for line in a.events("target gone: reconciler stopped"))
    assert not a.tracebacks() and not b.tracebacks()


def recommendations(cluster: KubeEmulator, name: str) -> list[dict[str, Any]]:
    return list(((status_of(cluster, name).get("history") or {}).get("recommendations")) or [])


async def scaled_down(timeline: Any, since: float) -> Sample:
    found: list[Sample] = []

    def seen() -> bool:
        sample = timeline.first(lambda s: s.replicas is not None and s.replicas < 8, since=since)
        found[:] = [sample] if sample is not None else []
        return bool(found)

    await wait_until(seen, 5, "the timeline to show the scale-down")
    return found[0]
