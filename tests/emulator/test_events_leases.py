"""Events (core/v1 and events.k8s.io/v1 share storage) and Leases (leader election)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient, ApiException
from kubernetes_asyncio.leaderelection import electionconfig, leaderelection
from kubernetes_asyncio.leaderelection.resourcelock.leaselock import LeaseLock

from kube_emulator import KubeEmulator


async def test_core_events_and_events_v1_are_the_same_objects(emulator: KubeEmulator, api: ApiClient) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_event(
        "default",
        client.CoreV1Event(
            metadata=client.V1ObjectMeta(name="web.1"),
            involved_object=client.V1ObjectReference(kind="Deployment", name="web", namespace="default"),
            reason="SuccessfulRescale",
            message="New size: 4; reason: cpu above target",
            type="Normal",
            source=client.V1EventSource(component="autoscaler"),
        ),
    )
    events_v1 = client.EventsV1Api(api)
    await events_v1.create_namespaced_event(
        "default",
        client.EventsV1Event(
            metadata=client.V1ObjectMeta(name="web.2"),
            event_time=datetime(2026, 1, 1, tzinfo=UTC),
            regarding=client.V1ObjectReference(kind="Deployment", name="web", namespace="default"),
            reason="FailedRescale",
            note="the scale update was rejected",
            type="Warning",
            action="Scale",
            reporting_controller="example.dev/autoscaler",
            reporting_instance="autoscaler-0",
        ),
    )
    listed = await core.list_namespaced_event("default", field_selector="involvedObject.name=web")
    assert sorted((e.reason, e.message) for e in listed.items) == [
        ("FailedRescale", "the scale update was rejected"),
        ("SuccessfulRescale", "New size: 4; reason: cpu above target"),
    ]
    warnings = await core.list_namespaced_event("default", field_selector="type=Warning")
    assert [e.metadata.name for e in warnings.items] == ["web.2"]
    read_back = await events_v1.read_namespaced_event("web.2", "default")
    assert read_back.note == "the scale update was rejected" and read_back.regarding.name == "web"
    by_regarding = await events_v1.list_namespaced_event("default", field_selector="regarding.name=web,type=Warning")
    assert [e.metadata.name for e in by_regarding.items] == ["web.2"]
    assert [e["reason"] for e in emulator.events(involved_name="web", reason="SuccessfulRescale")] == [
        "SuccessfulRescale"
    ]
    assert len(emulator.events("default", involved_kind="Deployment")) == 2


async def test_lease_replace_with_optimistic_concurrency(emulator: KubeEmulator, api: ApiClient) -> None:
    coordination = client.CoordinationV1Api(api)
    created = await coordination.create_namespaced_lease(
        "kube-system",
        client.V1Lease(
            metadata=client.V1ObjectMeta(name="autoscaler"),
            spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15),
        ),
    )
    first = await coordination.read_namespaced_lease("autoscaler", "kube-system")
    second = await coordination.read_namespaced_lease("autoscaler", "kube-system")
    first.spec.holder_identity = "b"
    renewed = await coordination.replace_namespaced_lease("autoscaler", "kube-system", first)
    assert renewed.spec.holder_identity == "b"
    assert renewed.metadata.resource_version != created.metadata.resource_version
    second.spec.holder_identity = "c"
    with pytest.raises(ApiException) as lost:
        await coordination.replace_namespaced_lease("autoscaler", "kube-system", second)
    assert lost.value.status == 409
    assert emulator.get("leases", "autoscaler", "kube-system")["spec"]["holderIdentity"] == "b"


async def test_kubernetes_asyncio_leader_election_acquires_and_renews(emulator: KubeEmulator, api: ApiClient) -> None:
    leading = asyncio.Event()

    async def on_started() -> None:
        leading.set()
        await asyncio.sleep(3600)

    async def on_stopped() -> None:
        pass

    lock = LeaseLock("autoscaler-leader", "kube-system", "candidate-a", api)
    config = electionconfig.Config(lock, 2, 1.5, 1, on_started, on_stopped)
    election = asyncio.create_task(leaderelection.LeaderElection(config).run())
    try:
        await asyncio.wait_for(leading.wait(), 5)
        lease = emulator.get("leases", "autoscaler-leader", "kube-system")
        assert lease is not None and lease["spec"]["holderIdentity"] == "candidate-a"
        for _ in range(40):  # the renewal is a PUT with the lease's resourceVersion
            if emulator.requests.count("update", "leases") > 0:
                break
            await asyncio.sleep(0.1)
        assert emulator.requests.find("update", "leases", status=200)
    finally:
        election.cancel()
        with pytest.raises(asyncio.CancelledError):
            await election
