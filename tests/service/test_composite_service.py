"""spec.composite in the service, against the emulator (whose CRD schema is enforced): the workload scales on
the formula's value, ``status.currentMetrics`` shows the composite as any External metric and the status'
explanation its formula and inputs; a failed input holds the count; a formula that names no metric is
reported at ``spec.composite.formula`` on the object, with its position."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from autoscaler.core.settings import ControllerSettings
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.manifests import load_documents
from tests.schemas import crd_version_schema, custom_resource_errors, pruned_fields
from tests.service.cluster import (
    CRD,
    FakeMetrics,
    condition,
    deployment,
    eventually,
    queue_metric,
    replicas_of,
    status_of,
    target,
)
from tests.service.manager_setup import running_manager


@pytest.fixture
async def emu() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.5, controllers=[WorkloadController(PodLifecycle())]) as emulator:
        emulator.install_crd(CRD)
        yield emulator


def composite_target(name: str, formula: str) -> dict[str, Any]:
    worker = target(name, name, metrics=[queue_metric("queue_a"), queue_metric("queue_b")])
    worker["spec"]["composite"] = {"formula": formula, "target": {"type": "AverageValue", "averageValue": "10"}}
    return worker


def composite_status(emu: KubeEmulator, name: str) -> dict[str, Any] | None:
    for entry in status_of(emu, name).get("currentMetrics", []):
        if entry.get("external", {}).get("metric", {}).get("name") == "composite-metric":
            return dict(entry["external"])
    return None


async def test_the_workload_scales_on_the_formula_and_the_status_shows_it(emu: KubeEmulator) -> None:
    emu.create(deployment("worker", 2))
    emu.create(composite_target("worker", "max(queue_a, queue_b) / 2"))
    emu.create(composite_target("broken", "queue_a + queue_c"))
    metrics = FakeMetrics()
    metrics.set("queue_a", 80)
    metrics.set("queue_b", 40)  # max(80, 40) / 2 = 40 against 10 per replica: 4
    schema = crd_version_schema(load_documents(CRD)[0], "v1alpha1")
    async with running_manager(
        emu, metrics.read_many, settings=ControllerSettings(), period=0.3, jitter=0.0, batch_window=0.05
    ) as manager:
        await eventually(lambda: replicas_of(emu, "worker") == 4, what="the formula's count")
        await eventually(  # 40 over the 4 replicas it has now
            lambda: (composite_status(emu, "worker") or {}).get("current") == {"averageValue": "10"},
            what="the composite's value in status.currentMetrics",
        )
        [obj] = [o for o in emu.list("scalingtargets.autoscaler.dev", "default") if o["metadata"]["name"] == "worker"]
        assert not list(pruned_fields(obj, schema, root=True)), "the CRD would prune spec.composite"
        assert not custom_resource_errors(obj, schema)
        explanation = status_of(emu, "worker")["lastDecision"]["explanation"]
        assert (
            "Composite metric composite-metric = max(queue_a, queue_b) / 2 with queue_a = 80, queue_b = 40 → 40."
            in (explanation)
        )

        metrics.set("queue_a", None)  # an input fails: the composite fails, the count is held
        metrics.set("queue_b", 0)

        def failed() -> bool:
            active = condition(status_of(emu, "worker"), "ScalingActive")
            return active is not None and "input queue_a failed" in active["message"]

        await eventually(failed, what="the composite failed, naming its input")
        syncs = manager.running[("default", "worker")].reconciler.syncs
        await eventually(lambda: manager.running[("default", "worker")].reconciler.syncs >= syncs + 3, what="syncs")
        assert replicas_of(emu, "worker") == 4, "no scale-down on a failed input"

        await eventually(lambda: condition(status_of(emu, "broken"), "ScalingActive") is not None, what="InvalidSpec")
        invalid = condition(status_of(emu, "broken"), "ScalingActive")
        assert invalid is not None and invalid["reason"] == "InvalidSpec"
        assert 'spec.composite.formula: unknown variable "queue_c"' in invalid["message"]
        assert "at line 1, column 11" in invalid["message"]
