"""Issue 37, item 5: a fleet-wide metrics brownout must not become a write storm.

Prometheus answers most queries with 503 for a while, a different few each sync (a brownout: a target's
ScalingActive flips each way from one sync to the next). Failed before: every flip of every target was a
status write and Events (~6,500 API writes a period at 10,000 targets; here 150–400 in 14 s for 20 or 40
targets). Now the service says it once — ``PrometheusDegraded`` in ``/api/backends`` and ``/readyz``, one
Event on its own object (its leader Lease here), ``autoscaler_prometheus_backend_degraded`` — and the
targets' writes that only say the backend failed (or no longer fails) pass a budget of
``backendHealth.writesPerPeriod`` a period: the API writes a period stay under a bound that does not
depend on the number of targets (checked at 20 and at 40). No decision changes: nothing scales. Once the
backend answers again every target's condition is true within a few periods.

With one failing target among healthy ones the backend is not degraded and nothing is held back: each of
that target's flips is written, and its Events are posted, as before.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from typing import Any

import pytest

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.promproxy import PrometheusProxy, Rule
from tests.chaos.relay import requests_matching
from tests.chaos.service import ServiceProcess, monotonic, wait_until
from tests.chaos.watch import scaling_active
from tests.chaos.world import queue_metric, replicas_of, set_load, target
from tests.service.cluster import deployment

BUDGET = 4  # backendHealth.writesPerPeriod: status writes and Events a period (1 s here) for a failing backend
HEALTH = {"writesPerPeriod": BUDGET, "minimumTargets": 5, "degradedShare": 0.5, "recoveryPeriods": 2}
WATCHED = 14.0  # seconds of brownout whose writes are counted
# What the service writes to the cluster (the Lease aside): status patches, Events created and counted up.
WRITES = requests_matching(r"^(POST|PUT|PATCH|DELETE) (?!.*/leases)")


class Brownout(Rule):
    """A share of the queries answered 503 (Prometheus overloaded), a different few at every hit."""

    def __init__(self, pattern: str, share: float) -> None:
        super().__init__(pattern, error_type="unavailable", error="too many queries in flight")
        self.share = share

    @property  # type: ignore[override]
    def status(self) -> int | None:
        # Decided by the hit (the proxy reads this more than once per answer).
        return 503 if random.Random(self.hits).random() < self.share else None

    @status.setter
    def status(self, value: int | None) -> None:
        pass


def query_of(index: int) -> str:
    return f'sum(queue_depth{{queue="jobs"}}) + 0 * {index}'  # a query of its own per target


async def fleet(chaos: Chaos, cluster: KubeEmulator, count: int) -> tuple[ServiceProcess, list[str]]:
    """``count`` targets of one replica each (10 deep, 10 a pod), the service running, each decided once."""
    names = [f"t{i}" for i in range(count)]
    for index, name in enumerate(names):
        cluster.create(deployment(name, 1))
        cluster.create(target(name, metrics=[queue_metric(query_of(index), name="queue_depth")]))
    instance = await chaos.service("one", backendHealth=HEALTH)
    for name in names:
        await wait_until(lambda n=name: scaling_active(cluster, n).get("status") == "True", 60, f"{name} decided")
    return instance, names


def written(writes: list[tuple[float, str]], began: float) -> dict[str, list[int]]:
    """Writes by kind (Event created, Event counted up, status) and second, for a failure's message."""
    kinds: dict[str, list[int]] = {}
    for at, line in writes:
        kind = "status" if line.endswith("/status") else "event " + line.split()[0]
        per_second = kinds.setdefault(kind, [0] * int(WATCHED + 1))
        per_second[min(int(at - began), int(WATCHED))] += 1
    return kinds


async def degraded(instance: ServiceProcess) -> float | None:
    return await instance.metric("autoscaler_prometheus_backend_degraded")


def lease_events(cluster: KubeEmulator, reason: str) -> list[dict[str, Any]]:
    return cluster.events("default", involved_name="autoscaler", involved_kind="Lease", reason=reason)


@pytest.mark.parametrize("count", [20, 40])
async def test_i37_5_a_brownout_costs_a_bounded_number_of_writes_whatever_the_targets(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
    count: int,
) -> None:
    await set_load(exporter, prometheus, 10)
    instance, names = await fleet(chaos, cluster, count)
    rule = proxy.add(Brownout("queue_depth", share=0.7))
    began = monotonic()
    await asyncio.sleep(WATCHED)
    writes = instance.relay.requests(WRITES, since=began)
    # The budget's burst and its refill over the window, the backend's Event, and a little slack: not N.
    bound = BUDGET * (WATCHED + 1) + 4
    assert len(writes) <= bound, f"{len(writes)} writes in {WATCHED:.0f}s of brownout for {count} targets: " + str(
        written(writes, began)
    )
    assert await degraded(instance) == 1
    assert len(lease_events(cluster, "PrometheusDegraded")) == 1
    _, text = await instance.get("/api/backends")
    [backend] = json.loads(text)["items"]
    assert backend["backend"] == proxy.url and backend["conditions"][0]["status"] == "True", backend
    assert backend["conditions"][0]["type"] == "PrometheusDegraded"
    assert (await instance.metric("autoscaler_prometheus_backend_held_writes_total") or 0) > 0
    ready, body = await instance.ready()
    assert ready and "PrometheusDegraded" in json.dumps(body), body
    assert {replicas_of(cluster, name) for name in names} == {1}  # a failed metric never scales

    proxy.remove(rule)
    back = monotonic()
    for name in names:
        await wait_until(
            lambda n=name: scaling_active(cluster, n).get("status") == "True", 20, f"{name}'s ScalingActive True"
        )
    assert monotonic() - back < 20
    await wait_until(lambda: _is(degraded(instance), 0), 10, "autoscaler_prometheus_backend_degraded 0")
    assert len(lease_events(cluster, "PrometheusRecovered")) == 1
    assert len(lease_events(cluster, "PrometheusDegraded")) == 1
    assert {replicas_of(cluster, name) for name in names} == {1}


async def _is(value: Any, expected: float) -> bool:
    return bool(await value == expected)


def decisions_of(instance: ServiceProcess, name: str) -> list[dict[str, Any]]:
    return [line for line in instance.events("decision") if line.get("name") == name]


class EverySecondQuery(Rule):
    """Every other query of the pattern answered 503: the target's metric fails at every other sync."""

    @property  # type: ignore[override]
    def status(self) -> int | None:
        return 503 if self.hits % 2 else None

    @status.setter
    def status(self, value: int | None) -> None:
        pass


async def test_i37_5_one_failing_target_among_healthy_ones_is_reported_as_before(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    await set_load(exporter, prometheus, 10)
    instance, names = await fleet(chaos, cluster, 12)
    flaky = names[3]
    before = len(decisions_of(instance, flaky))
    proxy.add(EverySecondQuery(r"\+ 0 \* 3$", error_type="unavailable", error="too many queries in flight"))
    began = monotonic()
    await asyncio.sleep(10.0)
    # Each of its syncs changes something now, so each has its decision line (a steady one logs at debug).
    outcomes = [line.get("error") is not None for line in decisions_of(instance, flaky)[before:]]
    flips = sum(1 for a, b in itertools.pairwise(outcomes) if a != b)
    status_writes = instance.relay.requests(
        requests_matching(rf"^PATCH \S*/scalingtargets/{flaky}/status"), since=began
    )
    assert flips >= 6, outcomes
    assert len(status_writes) >= flips - 1, f"{len(status_writes)} status writes for {flips} flips"  # each one written
    failures = cluster.events("default", involved_name=flaky, reason="FailedGetExternalMetric")
    assert failures and sum(int(e.get("count", 1)) for e in failures) >= outcomes.count(True) - 1
    assert await degraded(instance) == 0
    assert (await instance.metric("autoscaler_prometheus_backend_held_writes_total") or 0) == 0
    assert not lease_events(cluster, "PrometheusDegraded")
    for name in names:
        if name != flaky:
            assert scaling_active(cluster, name).get("status") == "True"
