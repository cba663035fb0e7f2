"""What the service writes into a ScalingTarget's status survives the CRD's schema.

A real API server prunes every field a structural schema does not specify, silently; the emulator keeps
everything. So the statuses the service writes — normal, dry-run, HVPA, invalid — are checked against
``manifests/crd.yaml`` here: validation errors and fields that would be dropped both fail.
(tests/service/test_rbac_coverage.py checks the statuses of its scenario the same way.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from autoscaler.core.settings import ControllerSettings
from autoscaler.kube.api import KubeApi
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.manifests import load_documents
from tests.schemas import crd_version_schema, custom_resource_errors, pruned_fields
from tests.service.cluster import CRD, VPA_CRD, FakeMetrics, deployment, eventually, status_of, target, vpa
from tests.service.manager_setup import build_manager


@pytest.fixture
async def emu() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.5, controllers=[WorkloadController(PodLifecycle())]) as emulator:
        emulator.install_crd(CRD)
        emulator.install_crd(VPA_CRD)
        yield emulator


def hvpa_target() -> dict[str, Any]:
    api = target("api", "api", max_replicas=3, metrics=[])
    del api["spec"]["metrics"]
    api["spec"]["hvpa"] = {
        "sources": ["vpa"],
        "containers": [{"name": "main"}],
        "scalingIntervals": [
            {"maxReplicas": 1, "maxResources": {"cpu": "500m", "memory": "2Gi"}},
            {"maxReplicas": 3, "maxResources": {"cpu": "2", "memory": "8Gi"}},
        ],
    }
    return api


@pytest.mark.parametrize("dry_run", [False, True], ids=["writing", "dry-run"])
async def test_written_statuses_fit_the_crd_schema(emu: KubeEmulator, dry_run: bool) -> None:
    emu.create(deployment("web", 2))
    emu.create(target("web", "web"))
    api_workload = deployment("api", 1, cpu="300m")
    api_workload["spec"]["template"]["spec"]["containers"][0]["name"] = "main"
    emu.create(api_workload)
    emu.seed(vpa("api", "api", cpu="1200m", memory="1Gi"))
    emu.create(hvpa_target())
    invalid = target("invalid", "web")
    invalid["spec"]["metrics"][0]["external"]["target"] = {"type": "Value", "value": "0"}  # the CRD admits it
    emu.create(invalid)
    metrics = FakeMetrics()
    metrics.set("queue", 40)
    async with emu.api_client() as client:
        manager = build_manager(
            KubeApi(client),
            metrics.read_many,
            settings=ControllerSettings(),
            period=0.3,
            jitter=0.0,
            batch_window=0.05,
            dry_run=dry_run,
        )
        await manager.start_caches()
        await manager.activate()
        try:
            await eventually(lambda: status_of(emu, "web").get("desiredReplicas") == 4, what="web's status")
            await eventually(lambda: "hvpa" in status_of(emu, "api"), what="api's HVPA status")
            await eventually(lambda: bool(status_of(emu, "invalid").get("conditions")), what="the invalid status")
        finally:
            await manager.stop()
    assert status_of(emu, "web").get("dryRun", False) is dry_run
    schema = crd_version_schema(load_documents(CRD)[0], "v1alpha1")
    for obj in emu.list("scalingtargets.autoscaler.dev", "default"):
        errors = custom_resource_errors(obj, schema)
        assert not errors, f"ScalingTarget {obj['metadata']['name']}: " + "; ".join(errors)


def test_pruning_is_detected() -> None:
    """The check above would see a status field the CRD does not specify."""
    schema = crd_version_schema(load_documents(CRD)[0], "v1alpha1")
    obj = {
        "apiVersion": "autoscaler.dev/v1alpha1",
        "kind": "ScalingTarget",
        "metadata": {"name": "x"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 2, "minReplica": 1},
        "status": {
            "currentReplicas": 1,
            "surprise": True,
            "conditions": [{"type": "A", "status": "True", "x": 1}],
            "lastDecision": {"anything": {"goes": 1}},
        },
    }
    assert list(pruned_fields(obj, schema, root=True)) == [
        "spec.minReplica",
        "status.surprise",
        "status.conditions[0].x",
    ]
