"""Lease leader election when the leader cannot renew, against the Kubernetes API emulator: it is fenced
(its writes refused) before anyone else can acquire, an API outage stops it at the renew deadline and it
recovers, conflicts are resolved by reading the Lease again, and 429s and errors slow its requests down.

Timings are scaled down (lease 1 s, renew deadline 0.6 s, retry 0.1 s). Per-candidate faults go through a
:class:`~tests.service.conftest.Link` (the emulator's faults hit every client alike); faults for everyone
use the emulator's own injector.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from autoscaler.kube.leader import LeaderElector, NotLeader
from kube_emulator import KubeEmulator
from tests.kube.emulated import Link
from tests.kube.leader_candidates import FAST, Candidate, eventually, lease_requests, lease_spec, running


@pytest.mark.parametrize("mode", ["error", "hang"])
async def test_a_leader_that_cannot_renew_is_fenced_before_anyone_else_can_acquire(
    emulator: KubeEmulator, api: ApiClient, link: Link, mode: str
) -> None:
    emulator.seed(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "writes", "namespace": "default"},
            "data": {"n": "0"},
        }
    )
    core = client.CoreV1Api(api)
    began: list[float] = []
    refused: list[float] = []
    written: list[float] = []

    async def write_while_leading(elector: LeaderElector) -> None:
        """The service's pattern: every write inside a leading_scope. Writes go over the healthy client."""
        n = 0
        while True:
            try:
                async with elector.leading_scope() as seconds_left:
                    began.append(time.monotonic())
                    n += 1
                    await core.patch_namespaced_config_map(
                        "writes", "default", {"data": {"n": str(n)}}, _request_timeout=seconds_left
                    )
                    written.append(time.monotonic())
            except NotLeader:
                refused.append(time.monotonic())
            await asyncio.sleep(0.01)

    async with link.api_client() as a_api:
        a, b = Candidate(a_api, "a"), Candidate(api, "b")
        async with running(a):
            await asyncio.wait_for(a.elector.wait_until_leading(), 2)
            writer = asyncio.create_task(write_while_leading(a.elector))
            async with running(b):
                await asyncio.sleep(0.3)
                assert written and not refused
                link.cut(mode, path="/leases")  # "a" loses the lease API only; its writes would still go through
                await asyncio.wait_for(b.elector.wait_until_leading(), 3)
                await asyncio.sleep(0.2)
                writer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await writer
                link.restore()
    fenced, b_leads = refused[0], b.started[0]
    assert began[-1] < fenced < b_leads
    assert fenced - written[-1] < 0.1  # writes went on right up to the fence…
    assert b_leads - fenced >= 0.3  # …which closed well before b could take over
    assert a.stopped[0] < b_leads  # and "a" was told to stop before that, too
    # Every write reached the server before b led; at most one was cut off in flight (sent, answer lost).
    landed = [r.started + (r.duration or 0.0) for r in emulator.requests.find("patch", "configmaps")]
    assert max(landed) < b_leads
    assert len(written) <= len(landed) <= len(written) + 1
    assert lease_spec(emulator)["leaseTransitions"] == 1


@pytest.mark.parametrize("fault", ["error", "delay"])
async def test_an_api_outage_stops_the_leader_at_the_renew_deadline_and_it_recovers(
    emulator: KubeEmulator, api: ApiClient, fault: str
) -> None:
    a = Candidate(api, "a")
    async with running(a):
        await asyncio.wait_for(a.elector.wait_until_leading(), 2)
        await asyncio.sleep(0.2)
        if fault == "error":
            emulator.faults.error(500, resource="leases")
        else:
            emulator.faults.delay(2.0, resource="leases")
        valid_until = a.elector.lease_valid_until
        assert valid_until is not None
        scope_ended: list[float] = []

        async def long_operation() -> None:
            try:
                async with a.elector.leading_scope():
                    await asyncio.sleep(10)
            except NotLeader:
                scope_ended.append(time.monotonic())

        operation = asyncio.create_task(long_operation())
        stopped = await eventually(lambda: bool(a.stopped), within=2)
        await operation
        # The renew in flight when the fault appeared may still have succeeded: at most one retry period later.
        assert valid_until - 0.05 <= stopped <= valid_until + FAST["retry_period"] + 0.1
        assert scope_ended and scope_ended[0] <= stopped
        assert not a.elector.is_leader and a.elector.lease_valid_until is None
        emulator.faults.clear()
        await asyncio.wait_for(a.elector.wait_until_leading(), 4)
    spec = lease_spec(emulator)
    assert spec["leaseTransitions"] == 0  # the record still named "a": re-acquired, not taken over
    assert len(a.started) == 2


async def test_a_leading_scope_follows_renewals(emulator: KubeEmulator, api: ApiClient) -> None:
    a = Candidate(api, "a")
    async with running(a):
        await asyncio.wait_for(a.elector.wait_until_leading(), 2)
        async with a.elector.leading_scope() as seconds_left:
            assert seconds_left <= FAST["renew_deadline"]
            await asyncio.sleep(0.8)  # longer than the renew deadline: renewals keep moving the deadline
        assert a.elector.is_leader


async def test_conflicts_on_renew_are_resolved_by_reading_the_lease_again(
    emulator: KubeEmulator, api: ApiClient
) -> None:
    a = Candidate(api, "a")
    async with running(a):
        await asyncio.wait_for(a.elector.wait_until_leading(), 2)
        rule = emulator.faults.conflicts(3, verb="update", resource="leases")
        await eventually(lambda: rule.exhausted)
        before = lease_spec(emulator)["renewTime"]
        await eventually(lambda: lease_spec(emulator)["renewTime"] > before)
        assert a.elector.is_leader and a.stopped == [] and len(a.started) == 1
    assert lease_spec(emulator)["leaseTransitions"] == 0


async def test_retry_after_is_honoured_by_a_candidate_and_by_the_leader(emulator: KubeEmulator, api: ApiClient) -> None:
    """429 with Retry-After: 1 on every Lease request: no request comes sooner after one (the retry period
    is 0.1 s); the leader, told to wait past its renew deadline, steps down; both come back after."""
    first, second = Candidate(api, "a"), Candidate(api, "b")
    async with running(first, second):
        await eventually(lambda: bool(first.started or second.started))
        leader, standby = (first, second) if first.started else (second, first)
        rule = emulator.faults.throttle(retry_after=1, resource="leases")
        since = time.monotonic()
        await asyncio.sleep(3.5)
        emulator.faults.remove(rule)
        moments = lease_requests(emulator, since)
        # two clients, each at most one request a second: ≤ 4 each in 3.5 s, instead of ~25 each
        assert len(moments) <= 9, f"{len(moments)} Lease requests in 3.5 s of Retry-After: 1"
        assert leader.stopped, "a leader that may not renew before its deadline steps down"
        await eventually(lambda: leader.elector.is_leader or standby.elector.is_leader, within=5.0)


async def test_errors_back_off_exponentially_up_to_the_lease_duration(emulator: KubeEmulator, api: ApiClient) -> None:
    candidate = Candidate(api, "a", lease_duration=1.0, renew_deadline=0.6, retry_period=0.1, jitter_factor=0.0)
    rule = emulator.faults.error(503, resource="leases")
    since = time.monotonic()
    async with running(candidate):
        await asyncio.sleep(3.0)
        moments = lease_requests(emulator, since)
        gaps = [b - a for a, b in itertools.pairwise(moments)]
        # 0.1, 0.2, 0.4, 0.8, then the 1 s cap: 7 or 8 attempts in 3 s instead of 30
        assert 5 <= len(moments) <= 9, gaps
        assert gaps[0] < 0.3 and max(gaps) >= 0.9 and all(g <= 1.3 for g in gaps), gaps
        emulator.faults.remove(rule)
        await eventually(lambda: bool(candidate.started), within=3.0)
