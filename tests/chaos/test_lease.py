"""The Lease under an unhappy API server (D6, F10 for the Lease): 429 Retry-After is honoured, 5xx backs
off, and a renewal that starts late because the process itself stalled is measured and warned about
before it becomes a lost Lease.

The 429 and 503 are answers a real server sends (API priority and fairness, an overloaded apiserver):
they come from the emulator's fault rules, as a Status with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time

from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.relay import requests_matching
from tests.chaos.service import ServiceProcess, wait_until

LEASE = requests_matching(r"/leases")


def leading(instance: ServiceProcess) -> bool:
    return len(instance.events("leader.started")) > len(instance.events("leader.stopped"))


async def two_instances(chaos: Chaos) -> list[ServiceProcess]:
    instances = [await chaos.service("a"), await chaos.service("b")]
    await wait_until(lambda: sum(leading(i) for i in instances) == 1, 30, "a leader")
    return instances


def gaps(moments: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(moments)]


async def test_d6_the_lease_honours_retry_after(chaos: Chaos, cluster: KubeEmulator) -> None:
    """Every Lease request answered 429 with ``Retry-After: 3``: no instance asks again sooner than that
    (before the fix: a GET every 0.6–1.1 s). Once the server accepts again, there is a leader within
    the lease duration plus a retry period or two."""
    instances = await two_instances(chaos)
    rule = cluster.faults.throttle(retry_after=3, resource="leases")
    started = time.monotonic()
    await asyncio.sleep(10)
    cluster.faults.remove(rule)
    ended = time.monotonic()
    assert rule.fired >= 2
    for instance in instances:
        moments = [at for at, _ in instance.relay.requests(LEASE, since=started) if at < ended]
        assert moments, f"{instance.name} stopped asking for the Lease"
        assert min(gaps(moments), default=3.0) >= 3.0 - 0.15, (
            f"{instance.name} asked again {min(gaps(moments)):.2f}s after a 429 with Retry-After: 3"
        )
    await wait_until(lambda: sum(leading(i) for i in instances) == 1, 3 + 3 + 3 * 2.2 + 3, "a leader again")


async def test_d6_the_lease_backs_off_on_5xx(chaos: Chaos, cluster: KubeEmulator) -> None:
    """Every Lease request answered 503 for 12 s: the attempts of each instance thin out (exponential
    backoff capped at the lease duration) instead of coming every retry period; then a leader again."""
    instances = await two_instances(chaos)
    rule = cluster.faults.error(503, resource="leases")
    started = time.monotonic()
    await asyncio.sleep(12)
    cluster.faults.remove(rule)
    ended = time.monotonic()
    for instance in instances:
        moments = [at for at, _ in instance.relay.requests(LEASE, since=started) if at < ended]
        # retryPeriod 0.5 s, doubling to the 3 s cap: at most 0, .5, 1.5, 3.5, 6.5, 9.5 (+ one in flight).
        # Without backoff: one every 0.5–1.1 s, 11 or more.
        assert 2 <= len(moments) <= 7, f"{instance.name} sent {len(moments)} Lease requests in 12 s of 503s"
        assert max(gaps(moments)) >= 2.5, f"{instance.name} never backed off: {gaps(moments)}"
    await wait_until(lambda: sum(leading(i) for i in instances) == 1, 3 + 3 * 2.2 + 5, "a leader again")
    assert not any(i.tracebacks() for i in instances)


async def test_d6_a_late_renewal_is_measured_and_warned(chaos: Chaos, cluster: KubeEmulator) -> None:
    """The leader stalls (SIGSTOP for 0.8 s, less than its 2 s renew deadline): the renewal that comes
    late is counted in ``autoscaler_leader_renew_late_seconds`` and logged as a warning."""
    instance = await chaos.service("a")
    await wait_until(lambda: leading(instance), 30, "a leads")
    # A stall that falls while a renewal is in flight only delays its answer (the next one is due a
    # retry period after it, on time): on a loaded machine requests are slower and that happens more
    # often, so stall again, a few times at most, until a renewal had to start late.
    for _ in range(5):
        await asyncio.sleep(1.0)
        instance.pause()
        await asyncio.sleep(0.8)
        instance.resume()
        with contextlib.suppress(AssertionError):
            await wait_until(lambda: instance.events("leader.renew_late"), 3, "a warning about the late renewal")
            break
    assert instance.events("leader.renew_late"), "no renewal started late in five stalls of 0.8 s"
    warning = instance.events("leader.renew_late")[0]
    assert warning["level"] == "warning"
    assert warning["late_seconds"] >= 0.25  # past half a retry period
    total = await instance.metric("autoscaler_leader_renew_late_seconds_sum")
    count = await instance.metric("autoscaler_leader_renew_late_seconds_count")
    assert count is not None and count >= 2, "every renewal attempt is observed"
    assert total is not None and total >= 0.25
