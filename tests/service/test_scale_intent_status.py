"""``status.pendingScale``: the scale write recorded in the status before it is sent (issue 37, item 7).

Through the service's own status code: the document written before the write restores to the intent,
and settles as the writer would have recorded the write; against the emulator with a real manager: the
status holds the intent while the write is in flight, fits the CRD's schema (a real API server would
prune a field it does not specify), and is replaced once the write is done — one status write more per
scale, none in a steady sync.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from autoscaler.core.observation import ExternalReading, Observation, ScaleInfo
from autoscaler.core.rescale import resolve_scale_intent, scale_intent
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import (
    Behavior,
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    PolicyType,
    ScalingPolicy,
    ScalingRules,
    SelectPolicy,
    TargetSpec,
)
from autoscaler.core.sync import ALL_WRITTEN, SyncInputs, SyncState, plan_sync, settle
from autoscaler.kube.api import KubeApi
from autoscaler.service.sync.status import status_document
from autoscaler.service.sync.status.restore import restore
from autoscaler.service.sync.status.sections import PENDING_SCALE, restore_scale_intent, scale_intent_document
from autoscaler.values.quantity import Quantity
from autoscaler.values.timestamps import parse_rfc3339
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.manifests import load_documents
from tests.schemas import crd_version_schema, custom_resource_errors, pruned_fields
from tests.service.cluster import CRD, FakeMetrics, deployment, eventually, replicas_of, status_of, target
from tests.service.manager_setup import build_manager

T0 = 1_800_000_000.25
QUEUE = MetricSpec(
    MetricSourceType.EXTERNAL, "q", MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("10"))
)
ONE_POD_A_MINUTE = ScalingRules(0, SelectPolicy.MAX, (ScalingPolicy(PolicyType.PODS, 1, 60),))
SPEC = TargetSpec(
    CrossVersionObjectReference("Deployment", "web"), 10, 1, (QUEUE,), Behavior(ONE_POD_A_MINUTE, ONE_POD_A_MINUTE)
)


def inputs(replicas: int, load: int, now: float) -> SyncInputs:
    return SyncInputs(
        Observation(ScaleInfo(replicas, replicas, "app=web"), [], (ExternalReading((load * 1000,), now),))
    )


def test_the_status_before_the_write_restores_to_the_intent_and_settles_as_the_writer_would() -> None:
    settings = ControllerSettings()
    settled = settle(plan_sync(SPEC, inputs(2, 20, T0), SyncState(), settings, T0), ALL_WRITTEN).state
    at = T0 + 10.5  # a time whose microseconds print exactly
    plan = plan_sync(SPEC, inputs(2, 100, at), settled, settings, at)
    intent = scale_intent(plan.decision, plan.now)
    document = status_document(
        plan.decision, generation=1, now=plan.now, extra={PENDING_SCALE: scale_intent_document(intent)}
    )
    assert document[PENDING_SCALE]["fromReplicas"] == 2 and document[PENDING_SCALE]["toReplicas"] == 3
    restored = restore(document, T0 + 30).target
    assert restored.scale_intent == intent  # the time to the microsecond, as the history keeps times
    landed, event = resolve_scale_intent(restored, SPEC, 3)
    written = settle(plan, ALL_WRITTEN)
    assert event == written.decision.events[-1]
    expected = written.state.target
    assert landed.history is not None and expected.history is not None
    assert landed.history.scale_up_events == expected.history.scale_up_events
    assert (landed.desired_replicas, landed.last_scale_time) == (expected.desired_replicas, expected.last_scale_time)
    assert [(x.type, x.status, x.reason, x.message) for x in landed.conditions] == [
        (x.type, x.status, x.reason, x.message) for x in expected.conditions
    ]


@pytest.mark.parametrize(
    "document",
    [
        None,
        "x",
        {},
        {"fromReplicas": 2, "toReplicas": 2, "at": "2027-01-15T08:00:00Z"},  # no change: no write
        {"fromReplicas": -1, "toReplicas": 2, "at": "2027-01-15T08:00:00Z"},
        {"fromReplicas": 1, "toReplicas": True, "at": "2027-01-15T08:00:00Z"},
        {"fromReplicas": 1, "toReplicas": 2, "at": "yesterday"},
        {"fromReplicas": 1, "toReplicas": 2},
    ],
)
def test_an_unreadable_intent_is_none(document: object) -> None:
    assert restore_scale_intent(document) is None


def test_an_intent_without_a_reason_reads() -> None:
    intent = restore_scale_intent({"fromReplicas": 1, "toReplicas": 2, "at": "2027-01-15T08:00:00.5Z"})
    assert intent is not None and (intent.previous, intent.replicas, intent.reason) == (1, 2, "")
    assert intent.at == parse_rfc3339("2027-01-15T08:00:00.5Z")


@pytest.fixture
async def emu() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.5, controllers=[WorkloadController(PodLifecycle())]) as emulator:
        emulator.install_crd(CRD)
        yield emulator


def status_writes(emu: KubeEmulator) -> int:
    return emu.requests.count("patch", "scalingtargets/status")


async def test_the_status_holds_the_write_while_it_is_in_flight_then_records_it(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(
        target("web", "web", behavior={"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}})
    )
    metrics = FakeMetrics()
    metrics.set("queue", 20)
    schema = crd_version_schema(load_documents(CRD)[0], "v1alpha1")
    async with emu.api_client() as client:
        manager = build_manager(
            KubeApi(client), metrics.read_many, settings=ControllerSettings(), period=0.3, jitter=0.0, batch_window=0.05
        )
        await manager.start_caches()
        await manager.activate()
        try:
            await eventually(lambda: status_of(emu, "web").get("desiredReplicas") == 2, what="a first status")
            steady = status_writes(emu)
            await eventually(lambda: manager.running[("default", "web")].reconciler.syncs >= 4, what="steady syncs")
            assert status_writes(emu) == steady, "a steady sync writes no status"

            emu.faults.delay(1.5, verb="patch", resource="deployments/scale", times=1)
            metrics.set("queue", 100)
            await eventually(lambda: PENDING_SCALE in status_of(emu, "web"), what="the write recorded before it")
            held = status_of(emu, "web")
            assert held[PENDING_SCALE]["fromReplicas"] == 2 and held[PENDING_SCALE]["toReplicas"] == 3
            assert replicas_of(emu, "web") == 2
            [obj] = emu.list("scalingtargets.autoscaler.dev", "default")
            assert not list(pruned_fields(obj, schema, root=True)), "the CRD would prune pendingScale"
            assert not custom_resource_errors(obj, schema)

            await eventually(lambda: PENDING_SCALE not in status_of(emu, "web"), 5, what="the status after the write")
            assert replicas_of(emu, "web") == 3
            [event] = status_of(emu, "web")["history"]["scaleUpEvents"]
            assert event == {"change": 1, "at": held[PENDING_SCALE]["at"]}
            assert status_writes(emu) == steady + 2, "one status write more per scale, before the write"
        finally:
            await manager.stop()
