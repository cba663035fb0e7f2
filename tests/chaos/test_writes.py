"""Writes against an unhappy API server (F8, F9, F10, write backoff of D6).

- F8: a concurrent writer (the real ``kubectl scale``) changes the replicas between the service's read and
  its write: the write carries the resourceVersion it decided on, gets 409, re-reads, sees the other
  writer's count and decides again at the next sync, with an Event; never a blind overwrite.
- F9: 5xx answers (the emulator answers what a real server would), connection resets and timeouts (the
  relay) on writes: the target backs off exponentially, says so in AbleToScale (FailedUpdateScale, the error, the
  next attempt) and in ``autoscaler_target_write_backoff_seconds``, sends no write storm, stays up, and
  recovers by itself once the server does.
- F10: a 429 with Retry-After on a write: honoured, and the instance's other requests wait too.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.relay import requests_matching
from tests.chaos.service import ServiceProcess, wait_until
from tests.chaos.world import condition, kubectl, replicas_of, set_load, status_of, target
from tests.service.cluster import deployment

SCALE_WRITES = requests_matching(r"^PATCH .*/deployments/web/scale")
# What an instance sends that changes the cluster, the Lease aside.
WRITES = requests_matching(r"^(POST|PUT|PATCH|DELETE) (?!.*/leases)")
FAST = {"scaleUp": {"policies": [{"type": "Pods", "value": 10, "periodSeconds": 1}]}}


async def steady_at_two(chaos: Chaos, exporter: MetricsExporter, prometheus: PrometheusSandbox) -> ServiceProcess:
    await set_load(exporter, prometheus, 20)
    chaos.cluster.create(deployment("web", 2))
    chaos.cluster.create(target("web", behavior=FAST))
    instance = await chaos.service("a")
    await wait_until(lambda: status_of(chaos.cluster, "web").get("desiredReplicas") == 2, 30, "a first decision")
    return instance


def able_to_scale(cluster: KubeEmulator) -> dict[str, str]:
    return condition(cluster, "web", "AbleToScale")


def backing_off(cluster: KubeEmulator) -> bool:
    able = able_to_scale(cluster)
    return able.get("reason") == "FailedUpdateScale" and "next attempt in" in able.get("message", "")


async def recovers(chaos: Chaos, instance: ServiceProcess, seconds: float = 30.0) -> None:
    """The scale to 4 lands by itself and the target says so; the backoff metric drops to 0."""
    await wait_until(lambda: replicas_of(chaos.cluster, "web") == 4, seconds, "the write after the backoff")
    await wait_until(lambda: able_to_scale(chaos.cluster).get("status") == "True", 10, "AbleToScale True")

    async def backoff_over() -> bool:
        return (
            await instance.metric(
                "autoscaler_target_write_backoff_seconds", namespace="default", name="web", path="horizontal"
            )
            == 0
        )

    await wait_until(backoff_over, 10, "autoscaler_target_write_backoff_seconds back to 0")
    # Log lines reach the log a little after the state they tell of (service/telemetry/log_writer.py lingers).
    await wait_until(lambda: instance.events("writes succeed again: backoff over"), 5, "the log line: backoff over")
    assert instance.alive() and not instance.tracebacks()


async def test_f9_persistent_5xx_on_the_scale_backs_off_and_says_so(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Every scale write answered 503 for 14 s. Before the backoff: a PATCH (and an Event) every
    period, 12 or more; now 1, 2, 4, 8 periods apart, and the condition tells when the next comes."""
    instance = await steady_at_two(chaos, exporter, prometheus)
    rule = cluster.faults.error(
        503, verb="patch", resource="deployments/scale", message="etcdserver: request timed out"
    )
    started = time.monotonic()
    await set_load(exporter, prometheus, 40)
    await wait_until(lambda: backing_off(cluster), 20, "AbleToScale False / FailedUpdateScale with the next attempt")
    message = able_to_scale(cluster)["message"]
    assert able_to_scale(cluster)["status"] == "False"
    assert "etcdserver: request timed out" in message, message
    await asyncio.sleep(max(0.0, started + 14 - time.monotonic()))
    scale_writes = instance.relay.requests(SCALE_WRITES, since=started)
    writes = instance.relay.requests(WRITES, since=started)
    assert 2 <= len(scale_writes) <= 5, f"{len(scale_writes)} scale writes in 14 s of 503s"
    # Each attempt: the status that records the write before it is sent, the write, its Event, the status.
    assert len(writes) <= 4 * 5 + 1, f"{len(writes)} writes in 14 s of 503s: {[w for _, w in writes]}"
    assert (
        await instance.metric(
            "autoscaler_target_write_backoff_seconds", namespace="default", name="web", path="horizontal"
        )
        or 0
    ) >= 1.5
    assert (await instance.metric("autoscaler_write_failures_total", kind="scale") or 0) >= 2
    assert cluster.events("default", involved_name="web", reason="FailedRescale")
    assert replicas_of(cluster, "web") == 2
    cluster.faults.remove(rule)
    await recovers(chaos, instance)


async def test_f9_connection_resets_on_writes_back_off_and_recover(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """The network resets every connection that carries a scale write (the relay, not the server): the
    same backoff and condition as for a 5xx; the process stays up; it recovers once writes pass."""
    instance = await steady_at_two(chaos, exporter, prometheus)
    instance.relay.reset_requests(SCALE_WRITES)
    started = time.monotonic()
    await set_load(exporter, prometheus, 40)
    await wait_until(lambda: backing_off(cluster), 20, "AbleToScale False / FailedUpdateScale with the next attempt")
    await asyncio.sleep(max(0.0, started + 10 - time.monotonic()))
    scale_writes = instance.relay.requests(SCALE_WRITES, since=started)
    assert 2 <= len(scale_writes) <= 5, f"{len(scale_writes)} scale writes in 10 s of resets"
    instance.relay.reset_requests(None)
    await recovers(chaos, instance)


async def test_f9_a_scale_write_that_times_out_backs_off_and_recovers(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """The network swallows the scale write (the relay freezes that connection: no answer, no error):
    the request times out after the API client's 10 s, AbleToScale says so with the next attempt, and
    the write lands once the network forwards again. Nothing else of the instance waits meanwhile."""
    instance = await steady_at_two(chaos, exporter, prometheus)
    instance.relay.freeze(SCALE_WRITES)
    await set_load(exporter, prometheus, 40)
    await wait_until(lambda: backing_off(cluster), 25, "AbleToScale False / FailedUpdateScale after the timeout")
    assert "no answer within 10s" in able_to_scale(cluster)["message"], able_to_scale(cluster)["message"]
    assert (await instance.ready())[0], "the instance stays ready (its caches and Lease are fine)"
    instance.relay.thaw()
    await recovers(chaos, instance)


async def test_f9_when_every_write_fails_the_backoff_is_in_the_metrics_and_log(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Status and Event writes fail too (503 on every PATCH and POST), so no condition can reach the
    object: the backoff shows in the metric and the log, and the write rate stays low."""
    instance = await steady_at_two(chaos, exporter, prometheus)
    rules = [cluster.faults.error(503, verb="patch"), cluster.faults.error(503, verb="create")]
    started = time.monotonic()
    await set_load(exporter, prometheus, 40)
    await wait_until(lambda: instance.events("write failed: backing off"), 20, "a log line about the backoff")
    await asyncio.sleep(max(0.0, started + 14 - time.monotonic()))
    writes = instance.relay.requests(WRITES, since=started)
    assert len(writes) <= 16, f"{len(writes)} writes in 14 s of 503s"
    failures = instance.events("write failed: backing off")
    assert failures[-1]["failures"] >= 3 and failures[-1]["retry_in"] >= 2
    for rule in rules:
        cluster.faults.remove(rule)
    await recovers(chaos, instance)


async def test_f8_a_concurrent_kubectl_scale_is_never_overwritten_blindly(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    """``kubectl scale --replicas=6`` lands while the service's scale write to 4 is on its way (the
    server holds that request 2 s before running it): the write answers 409, the service re-reads, sees
    6, records an Event and decides again from 6 at the next sync. Already held before this work."""
    instance = await steady_at_two(chaos, exporter, prometheus)
    cluster.faults.delay(2.0, verb="patch", resource="deployments/scale", times=1)
    await set_load(exporter, prometheus, 40)
    await wait_until(lambda: instance.relay.requests(SCALE_WRITES), 20, "the service's scale write")
    await kubectl(cluster, tmp_path, "scale", "deployment/web", "--replicas=6")
    await wait_until(
        lambda: cluster.events("default", involved_name="web", reason="FailedRescale"),
        15,
        "an Event about the conflict",
    )
    event = cluster.events("default", involved_name="web", reason="FailedRescale")[0]
    assert "changed from 2 to 6" in event["message"], event["message"]
    conflicts = cluster.requests.find("patch", "deployments/scale", status=409)
    assert len(conflicts) == 1
    replicas: list[int] = []
    for version in cluster.history("deployments", "web"):
        if not replicas or replicas[-1] != version["spec"]["replicas"]:
            replicas.append(version["spec"]["replicas"])
    assert replicas[:2] == [2, 6], replicas  # the stale write never landed
    # The next decisions start from kubectl's 6 (and, the load asking for 4, scale down once allowed).
    await wait_until(lambda: status_of(cluster, "web").get("currentReplicas") in (6, 4), 15, "a decision from 6")
    assert not instance.tracebacks()
    assert not instance.events("write failed: backing off"), "a conflict is not a failing server"


async def test_f10_a_429_on_a_write_is_honoured_by_every_request_of_the_instance(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """The scale write is answered 429 with ``Retry-After: 2`` once: the write lands after 2 s, and the
    instance's other API requests (Events, statuses, reads) wait as well. Already held before this work
    (the Lease, on its own client, is D6: tests/chaos/test_lease.py)."""
    instance = await steady_at_two(chaos, exporter, prometheus)
    rule = cluster.faults.throttle(retry_after=2, verb="patch", resource="deployments/scale", times=1)
    await set_load(exporter, prometheus, 40)
    await wait_until(lambda: replicas_of(cluster, "web") == 4, 20, "the write after Retry-After")
    assert rule.fired == 1
    throttled = cluster.requests.find("patch", "deployments/scale", status=429)[0].started
    others = [
        at
        for at, line in instance.relay.requests(since=throttled + 0.05)
        if "/leases" not in line and "watch=true" not in line
    ]
    assert others and min(others) >= throttled + 2 - 0.1, "the instance waited out Retry-After"
    assert able_to_scale(cluster).get("reason") != "FailedUpdateScale"
