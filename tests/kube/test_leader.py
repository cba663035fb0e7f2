"""Lease leader election against the Kubernetes API emulator, driven by the real kubernetes-asyncio client:
who leads. One candidate acquires and renews, of two exactly one leads, a killed holder is replaced after
the lease duration, a graceful release hands over at once, a seized lease ends leadership, and only
durations measured here count. A leader that cannot renew: test_leader_fencing.py.

Timings are scaled down (lease 1 s, renew deadline 0.6 s, retry 0.1 s). Per-candidate faults go through a
:class:`~tests.service.conftest.Link` (the emulator's faults hit every client alike).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from kubernetes_asyncio.client import ApiClient

from autoscaler.kube.leader import LeaderElector, NotLeader
from autoscaler.kube.lease import default_identity, micro_time
from kube_emulator import KubeEmulator
from tests.kube.emulated import Link
from tests.kube.leader_candidates import (
    FAST,
    MICRO_TIME,
    NAME,
    NAMESPACE,
    Candidate,
    eventually,
    lease_spec,
    running,
    wall,
)


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
        # Three renewals, however long they take on a busy machine (one every retry period on an idle one).
        await eventually(lambda: emulator.requests.count("update", "leases") >= 3, within=10)
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
                cut_at = time.monotonic()
                link.cut("error")  # a crash: nothing more from "a", not even its release
                await a.stop()
                last = lease_spec(emulator)
                assert last["holderIdentity"] == "a"
                await asyncio.wait_for(b.elector.wait_until_leading(), 10)
                taken = lease_spec(emulator)
    # Both wall times come from this machine's clock: b waited a full lease duration after a's last renew.
    waited = (wall(taken["acquireTime"]) - wall(last["renewTime"])).total_seconds()
    assert FAST["lease_duration"] <= waited
    # …and took it a retry period or so after it expired, timed from b's first read of a's last record (its
    # answer), not from a's renewal: how late b's reads come on a busy machine is not what is tested.
    writes = emulator.requests.find("create", "leases") + emulator.requests.find("update", "leases")
    last_renew = max((w for w in writes if w.started < cut_at), key=lambda w: w.started)  # a's
    acquired = min((w for w in writes if w.started > cut_at), key=lambda w: w.started)  # b's (then its release)
    renewed_at = last_renew.started + (last_renew.duration or 0.0)
    seen = min(
        read.started + (read.duration or 0.0)
        for read in emulator.requests.find("get", "leases")
        if read.started > renewed_at
    )
    assert acquired.started - seen < FAST["lease_duration"] + 0.6, (
        f"b took the lease {acquired.started - seen:.2f}s after it saw it"
    )
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
            took_over = await eventually(lambda: b.elector.is_leader, within=10)
            # b took the lease at its first look after the release (a jittered retry period on an idle machine),
            # not once the 5 s lease ran out: counted in b's reads, which a busy machine does not change.
            looks = [read for read in emulator.requests.find("get", "leases") if read.started > released_at]
            assert len(looks) <= 1, f"b read the released lease {len(looks)} times before taking it"
            assert took_over - released_at < slow_lease["lease_duration"]
            assert lease_spec(emulator)["leaseTransitions"] == 1
        # b released on its way out too; a fresh "a" counts a third holder.
        a2 = Candidate(api, "a", **slow_lease)
        async with running(a2):
            await asyncio.wait_for(a2.elector.wait_until_leading(), 2)
            assert lease_spec(emulator)["leaseTransitions"] == 2


async def test_a_lease_seized_by_someone_else_ends_leadership_and_counts_transitions(
    emulator: KubeEmulator, api: ApiClient
) -> None:
    a = Candidate(api, "a")
    async with running(a):
        await asyncio.wait_for(a.elector.wait_until_leading(), 2)
        emulator.patch(
            "leases", NAME, {"spec": {"holderIdentity": "intruder", "leaseTransitions": 1}}, namespace=NAMESPACE
        )
        lost = await eventually(lambda: bool(a.stopped), within=10)
        assert a.elector.leader_identity == "intruder" and a.leaders == ["a", "intruder"]
        regained = await eventually(lambda: a.elector.is_leader, within=10)
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
    async with running(skewed):
        took = await eventually(lambda: skewed.elector.is_leader, within=10)
    # Timed from the moment the candidate first saw the record (its first read's answer), not from its start:
    # how long a busy machine takes to start it and send that read is not what is tested.
    first_read = emulator.requests.find("get", "leases")[0]
    seen = first_read.started + (first_read.duration or 0.0)
    assert 1.0 <= took - seen < 1.6
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


async def test_each_renewal_reports_how_late_it_started(emulator: KubeEmulator, api: ApiClient) -> None:
    late: list[float] = []
    candidate = Candidate(api, "a", observe_renew_late=late.append)
    async with running(candidate):
        await eventually(lambda: len(late) >= 3)
    assert all(0 <= seconds < 0.1 for seconds in late), late  # an idle loop renews on time


async def test_a_renewal_the_leader_never_saw_answered_does_not_stop_its_release(
    emulator: KubeEmulator, link: Link
) -> None:
    """A shutdown can cut a renewal short after the server wrote it: the renewal reaches the server through
    the relay and its answer is lost, then the leader stops. Its copy of the Lease is a version behind and
    its release a 409; it reads the Lease again and, still the holder, releases it (the standby need not
    wait out the lease)."""
    slow_lease = {"lease_duration": 5.0, "renew_deadline": 3.0, "retry_period": 0.2}
    async with link.api_client() as api:
        a = Candidate(api, "a", **slow_lease)
        async with running(a):
            await asyncio.wait_for(a.elector.wait_until_leading(), 2)
            before = lease_spec(emulator)["renewTime"]
            link.cut("unanswered", path="/leases/")
            await eventually(lambda: link.cut_requests >= 1, within=2)  # written, its answer held
            assert lease_spec(emulator)["renewTime"] != before
            link.restore()
            await a.stop()
    assert lease_spec(emulator)["holderIdentity"] == ""


async def test_a_lease_another_holder_took_while_the_leader_stopped_is_left_alone(
    emulator: KubeEmulator, api: ApiClient
) -> None:
    """The release's 409 comes from someone else's write this time: the Lease read again is not this
    holder's, and it is left as it is."""
    a = Candidate(api, "a", lease_duration=5.0, renew_deadline=3.0, retry_period=2.0)
    async with running(a):
        await asyncio.wait_for(a.elector.wait_until_leading(), 2)
        emulator.patch("leases", NAME, {"spec": {"holderIdentity": "intruder"}}, namespace=NAMESPACE)
        await a.stop()
    assert lease_spec(emulator)["holderIdentity"] == "intruder"
