"""Lease leader election against the Kubernetes API emulator, driven by the real kubernetes-asyncio client.

Timings are scaled down (lease 1 s, renew deadline 0.6 s, retry 0.1 s). Per-candidate faults go through a
:class:`~tests.service.conftest.Link` (the emulator's faults hit every client alike); faults for everyone
use the emulator's own injector.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from autoscaler.kube.leader import LeaderElector, NotLeader
from autoscaler.kube.lease import default_identity, micro_time
from kube_emulator import KubeEmulator
from tests.service.conftest import Link

NAMESPACE, NAME = "kube-system", "autoscaler"
FAST: dict[str, float] = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class Candidate:
    """An elector running in a task, with every callback recorded against time.monotonic()."""

    def __init__(self, api: ApiClient, identity: str, **options: Any) -> None:
        self.elector = LeaderElector(api, namespace=NAMESPACE, name=NAME, identity=identity, **(FAST | options))
        self.started: list[float] = []
        self.stopped: list[float] = []
        self.leaders: list[str] = []
        self.elector.on_started_leading(lambda: self.started.append(time.monotonic()))
        self.elector.on_stopped_leading(self._stopped)
        self.elector.on_new_leader(self.leaders.append)
        self.task: asyncio.Task[None] | None = None

    async def _stopped(self) -> None:  # async callbacks are awaited too
        self.stopped.append(time.monotonic())

    def start(self) -> Candidate:
        self.task = asyncio.create_task(self.elector.run())
        return self

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


@contextlib.asynccontextmanager
async def running(*candidates: Candidate) -> AsyncIterator[None]:
    for candidate in candidates:
        candidate.start()
    try:
        yield
    finally:
        for candidate in candidates:
            await candidate.stop()


async def eventually(predicate: Callable[[], bool], within: float = 3.0) -> float:
    """Wait until ``predicate()``; return the monotonic time it was first seen true."""
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.005)
    return time.monotonic()


def lease_spec(emulator: KubeEmulator) -> dict[str, Any]:
    lease = emulator.get("leases", NAME, NAMESPACE)
    assert lease is not None
    spec: dict[str, Any] = lease["spec"]
    return spec


def wall(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture
def non_utc_timezone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run in UTC−5/−4, where kubernetes-asyncio's own elector writes renewTime hours off."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("non_utc_timezone")
async def test_a_single_candidate_acquires_renews_and_writes_utc_micro_times(
    emulator: KubeEmulator, api: ApiClient
) -> None:
    a = Candidate(api, "a")
    async with running(a):
        await asyncio.wait_for(a.elector.wait_until_leading(), 2)
        assert a.elector.is_leader and a.elector.leader_identity == "a" and a.leaders == ["a"]
        assert 0 < a.elector.assert_leading() <= FAST["renew_deadline"]
        first = lease_spec(emulator)
        await asyncio.sleep(0.35)
        renewed = lease_spec(emulator)
    assert first["holderIdentity"] == "a" and first["leaseDurationSeconds"] == 1 and first["leaseTransitions"] == 0
    assert MICRO_TIME.match(first["acquireTime"]) and MICRO_TIME.match(renewed["renewTime"])
    assert abs((wall(renewed["renewTime"]) - datetime.now(UTC)).total_seconds()) < 2  # UTC, not local time
    assert renewed["acquireTime"] == first["acquireTime"] and renewed["renewTime"] > first["renewTime"]
    assert emulator.requests.count("update", "leases") >= 3  # a renew every retry period, one PUT each
    assert len(a.started) == 1 and len(a.stopped) == 1  # stopped on shutdown


async def test_two_candidates_exactly_one_leads(emulator: KubeEmulator, api: ApiClient) -> None:
    a, b = Candidate(api, "a"), Candidate(api, "b")
    async with running(a, b):
        await eventually(lambda: a.elector.is_leader or b.elector.is_leader)
        for _ in range(30):
            assert a.elector.is_leader != b.elector.is_leader
            await asyncio.sleep(0.02)
        leader, standby = (a, b) if a.elector.is_leader else (b, a)
        assert lease_spec(emulator)["holderIdentity"] == leader.elector.identity
        assert standby.elector.leader_identity == leader.elector.identity
        assert standby.leaders == [leader.elector.identity] and standby.started == []
        with pytest.raises(NotLeader):
            standby.elector.assert_leading()
        assert lease_spec(emulator)["leaseTransitions"] == 0


async def test_a_killed_holder_is_replaced_after_lease_duration_and_not_before(
    emulator: KubeEmulator, api: ApiClient, link: Link
) -> None:
    async with link.api_client() as a_api:
        a, b = Candidate(a_api, "a"), Candidate(api, "b")
        async with running(a):
            await asyncio.wait_for(a.elector.wait_until_leading(), 2)
            async with running(b):
                await asyncio.sleep(0.3)
                link.cut("error")  # a crash: nothing more from "a", not even its release
                await a.stop()
                last = lease_spec(emulator)
                assert last["holderIdentity"] == "a"
                await asyncio.wait_for(b.elector.wait_until_leading(), 3)
                taken = lease_spec(emulator)
    # Both wall times come from this machine's clock: b waited a full lease duration after a's last renew.
    waited = (wall(taken["acquireTime"]) - wall(last["renewTime"])).total_seconds()
    assert FAST["lease_duration"] <= waited < FAST["lease_duration"] + 0.6
    assert taken["holderIdentity"] == "b" and taken["leaseTransitions"] == 1
    assert b.leaders == ["a", "b"]


async def test_graceful_release_lets_the_standby_take_over_within_a_retry_period(
    emulator: KubeEmulator, api: ApiClient
) -> None:
    slow_lease = {"lease_duration": 5.0, "renew_deadline": 3.0, "retry_period": 0.1}
    a, b = Candidate(api, "a", **slow_lease), Candidate(api, "b", **slow_lease)
    async with running(a):
        await asyncio.wait_for(a.elector.wait_until_leading(), 2)
        async with running(b):
            await eventually(lambda: b.elector.leader_identity == "a")
            await a.stop()
            released_at = time.monotonic()
            released = lease_spec(emulator)
            assert released["holderIdentity"] == "" and released["leaseDurationSeconds"] == 1
            assert MICRO_TIME.match(released["renewTime"])
            assert a.stopped and a.stopped[0] <= released_at  # stopped acting before giving the lease up
            took_over = await eventually(lambda: b.elector.is_leader, within=2)
            assert took_over - released_at < 0.1 * 2.2 + 0.15  # a jittered retry period, not the 5 s lease
            assert lease_spec(emulator)["leaseTransitions"] == 1
        # b released on its way out too; a fresh "a" counts a third holder.
        a2 = Candidate(api, "a", **slow_lease)
        async with running(a2):
            await asyncio.wait_for(a2.elector.wait_until_leading(), 2)
            assert lease_spec(emulator)["leaseTransitions"] == 2


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


async def test_a_lease_seized_by_someone_else_ends_leadership_and_counts_transitions(
    emulator: KubeEmulator, api: ApiClient
) -> None:
    a = Candidate(api, "a")
    async with running(a):
        await asyncio.wait_for(a.elector.wait_until_leading(), 2)
        emulator.patch(
            "leases", NAME, {"spec": {"holderIdentity": "intruder", "leaseTransitions": 1}}, namespace=NAMESPACE
        )
        lost = await eventually(lambda: bool(a.stopped), within=1)
        assert a.elector.leader_identity == "intruder" and a.leaders == ["a", "intruder"]
        regained = await eventually(lambda: a.elector.is_leader, within=3)
        assert regained - lost >= FAST["lease_duration"] - 0.2  # the intruder's record had to sit unchanged
    assert lease_spec(emulator)["leaseTransitions"] == 2


async def test_wall_clock_times_in_the_lease_are_ignored(emulator: KubeEmulator, api: ApiClient) -> None:
    """A record renewed "in 1999" is not expired until it has sat unchanged for leaseDuration here."""
    ancient = micro_time(datetime(1999, 1, 1, tzinfo=UTC))
    emulator.seed(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "spec": {
                "holderIdentity": "ghost",
                "leaseDurationSeconds": 1,
                "acquireTime": ancient,
                "renewTime": ancient,
                "leaseTransitions": 4,
            },
        }
    )
    skewed = Candidate(api, "a", clock=lambda: time.monotonic() + 86_400.0)  # any offset: only durations count
    started = time.monotonic()
    async with running(skewed):
        took = await eventually(lambda: skewed.elector.is_leader, within=3)
    assert 1.0 <= took - started < 1.6
    assert lease_spec(emulator)["leaseTransitions"] == 5


async def test_racing_candidates_take_an_expired_lease_once(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 1, "leaseTransitions": 0},
        }
    )
    candidates = [Candidate(api, f"c{i}", jitter_factor=0.0) for i in range(3)]
    async with running(*candidates):
        await eventually(lambda: any(c.elector.is_leader for c in candidates))
        await asyncio.sleep(0.15)
        assert sum(c.elector.is_leader for c in candidates) == 1
        assert lease_spec(emulator)["leaseTransitions"] == 1


async def test_timings_are_validated_and_identities_are_unique(api: ApiClient) -> None:
    with pytest.raises(ValueError, match="renew_deadline < lease_duration"):
        LeaderElector(api, namespace="n", name="l", identity="a", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError, match="identity"):
        LeaderElector(api, namespace="n", name="l", identity="")
    assert default_identity() != default_identity()


def lease_requests(emulator: KubeEmulator, since: float) -> list[float]:
    return [r.started for r in emulator.requests.records if r.resource == "leases" and r.started >= since]


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


async def test_each_renewal_reports_how_late_it_started(emulator: KubeEmulator, api: ApiClient) -> None:
    late: list[float] = []
    candidate = Candidate(api, "a", observe_renew_late=late.append)
    async with running(candidate):
        await eventually(lambda: len(late) >= 3)
    assert all(0 <= seconds < 0.1 for seconds in late), late  # an idle loop renews on time
