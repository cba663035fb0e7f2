"""spec.fallback in the service, against the emulator: a target whose queue cannot be read scales to its
fallback replicas past the threshold (condition Fallback, Event FallbackActivated, the gauge,
status.metricHealth fitting the CRD's schema); a restarted service goes on from the status (the fallback
neither begins again nor is announced twice); the first answer ends it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from autoscaler.core.settings import ControllerSettings
from autoscaler.service.sync.writes import status_patch
from autoscaler.service.telemetry.metrics import ServiceMetrics
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.manifests import load_documents
from tests.schemas import crd_version_schema, custom_resource_errors, pruned_fields
from tests.service.cluster import (
    CRD,
    FakeMetrics,
    condition,
    deployment,
    eventually,
    replicas_of,
    status_of,
    target,
)
from tests.service.manager_setup import running_manager

OPTIONS: dict[str, Any] = {"settings": ControllerSettings(), "period": 0.3, "jitter": 0.0, "batch_window": 0.05}


@pytest.fixture
async def emu() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.5, controllers=[WorkloadController(PodLifecycle())]) as emulator:
        emulator.install_crd(CRD)
        yield emulator


def fallback(emu: KubeEmulator) -> tuple[str, str, str] | None:
    found = condition(status_of(emu, "worker"), "Fallback")
    return None if found is None else (found["status"], found["reason"], found.get("lastTransitionTime", ""))


def event_reasons(emu: KubeEmulator) -> list[str]:
    return [e["reason"] for e in emu.list("events", "default") if e["involvedObject"]["name"] == "worker"]


def health(emu: KubeEmulator) -> Any:
    return status_of(emu, "worker").get("metricHealth", {}).get("external/queue")


async def test_a_failing_queue_falls_back_survives_a_restart_and_ends_when_it_answers(emu: KubeEmulator) -> None:
    emu.create(deployment("worker", 2))
    worker = target("worker", "worker")
    worker["spec"]["fallback"] = {"replicas": 5, "failureThreshold": 2}
    emu.create(worker)
    metrics = FakeMetrics()
    metrics.set("queue", 20)  # 20 against 10 per replica: 2
    schema = crd_version_schema(load_documents(CRD)[0], "v1alpha1")
    gauges = ServiceMetrics(process_metrics=False)
    async with running_manager(emu, metrics.read_many, metrics=gauges, **OPTIONS):
        await eventually(lambda: health(emu) == {"numberOfFailures": 0, "status": "Happy"}, what="a happy metric")
        assert fallback(emu) is not None and fallback(emu)[:2] == ("False", "NoFallbackFound")  # type: ignore[index]
        assert 'autoscaler_target_fallback_active{name="worker",namespace="default"} 0.0' in gauges.render().decode()

        metrics.set("queue", None)  # Prometheus stops answering: 3 failures in a row fall back
        await eventually(lambda: replicas_of(emu, "worker") == 5, what="the fallback's replicas")
        began = fallback(emu)
        assert began is not None and began[:2] == ("True", "FallbackExists")
        assert event_reasons(emu).count("FallbackActivated") == 1
        assert 'autoscaler_target_fallback_active{name="worker",namespace="default"} 1.0' in gauges.render().decode()
        [obj] = emu.list("scalingtargets.autoscaler.dev", "default")
        assert not list(pruned_fields(obj, schema, root=True)), "the CRD would prune metricHealth"
        assert not custom_resource_errors(obj, schema)
        assert health(emu)["numberOfFailures"] == 3 and health(emu)["status"] == "Failing"
        since = health(emu)["since"]

    async with running_manager(emu, metrics.read_many, **OPTIONS) as manager:  # a restart mid-outage
        await eventually(lambda: manager.running[("default", "worker")].reconciler.syncs >= 3, what="3 syncs")
        assert fallback(emu) == began, "the fallback goes on: the count was restored, not started again"
        assert event_reasons(emu).count("FallbackActivated") == 1
        assert health(emu) == {"numberOfFailures": 3, "status": "Failing", "since": since}
        assert replicas_of(emu, "worker") == 5

        metrics.set("queue", 60)  # it answers: the queue's own count (60 / 10 = 6) at once
        await eventually(lambda: "FallbackDeactivated" in event_reasons(emu), what="the end of the fallback")
        assert fallback(emu) is not None and fallback(emu)[:2] == ("False", "NoFallbackFound")  # type: ignore[index]
        assert health(emu) == {"numberOfFailures": 0, "status": "Happy"}
        await eventually(lambda: replicas_of(emu, "worker") == 6, what="the metric's count")


def test_a_status_write_nulls_what_the_new_status_lacks_at_any_depth() -> None:
    previous = {
        "metricHealth": {"external/queue": {"numberOfFailures": 3, "status": "Failing", "since": "t"}, "pods/x": {}},
        "pendingScale": {"toReplicas": 3},
        "history": [1, 2],
    }
    document = {"metricHealth": {"external/queue": {"numberOfFailures": 0, "status": "Happy"}}, "history": [3]}
    assert status_patch(previous, document) == {
        "pendingScale": None,
        "metricHealth": {"pods/x": None, "external/queue": {"since": None, "numberOfFailures": 0, "status": "Happy"}},
        "history": [3],
    }
