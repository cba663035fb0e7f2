"""spec.activation in the service, against the emulator: a Deployment a person scales to 0 with the real
``kubectl scale`` is woken while its queue is active (the stranding bug of issue 36: without activation
the autoscaler leaves a zero it did not make), then sent back to 0 once the queue has been empty for the
cooldown; the status (condition Active, lastActiveTime) fits the CRD's schema and restores after a restart.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from autoscaler.core.settings import ControllerSettings
from autoscaler.service.sync.status.restore import restore
from autoscaler.values.timestamps import parse_rfc3339
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


@pytest.fixture
async def emu() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.5, controllers=[WorkloadController(PodLifecycle())]) as emulator:
        emulator.install_crd(CRD)
        yield emulator


async def kubectl(emu: KubeEmulator, workdir: Path, *args: str) -> None:
    config = emu.write_kubeconfig(workdir / "kubeconfig")
    result = await asyncio.to_thread(
        subprocess.run, ["kubectl", "--kubeconfig", str(config), *args], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"


def active(emu: KubeEmulator) -> tuple[str, str] | None:
    found = condition(status_of(emu, "worker"), "Active")
    return None if found is None else (found["status"], found["reason"])


def event_reasons(emu: KubeEmulator) -> list[str]:
    return [e["reason"] for e in emu.list("events", "default") if e["involvedObject"]["name"] == "worker"]


async def test_a_zero_set_with_kubectl_is_woken_and_the_cooldown_sends_it_back(
    emu: KubeEmulator, tmp_path: Path
) -> None:
    emu.create(deployment("worker", 2))
    worker = target("worker", "worker", min_replicas=0)
    worker["spec"]["activation"] = {"cooldownSeconds": 1}
    emu.create(worker)
    metrics = FakeMetrics()
    metrics.set("queue", 20)  # 20 against 10 per replica: 2, active (20 > 0)
    schema = crd_version_schema(load_documents(CRD)[0], "v1alpha1")
    async with running_manager(
        emu, metrics.read_many, settings=ControllerSettings(), period=0.3, jitter=0.0, batch_window=0.05
    ) as manager:
        await eventually(lambda: active(emu) == ("True", "ScalerActive"), what="the target active")
        assert "lastActiveTime" not in status_of(emu, "worker"), "not written every sync while active"

        await kubectl(emu, tmp_path, "scale", "deployment/worker", "--replicas=0")
        await eventually(lambda: "Activated" in event_reasons(emu), what="the zero a person set woken")
        await eventually(lambda: replicas_of(emu, "worker") == 2, what="the HPA algorithm's count after the wake")
        [activated] = [e for e in emu.list("events", "default") if e["reason"] == "Activated"]
        assert activated["message"] == "Scaled Deployment worker from 0 to 1, triggered by queue"

        metrics.set("queue", 0)
        await eventually(lambda: replicas_of(emu, "worker") == 0, what="idle after the cooldown")
        await eventually(lambda: "Deactivated" in event_reasons(emu), what="the Deactivated Event")
        status = status_of(emu, "worker")
        assert active(emu) == ("False", "ScalerNotActive")
        last_active = parse_rfc3339(status.get("lastActiveTime"))
        assert last_active is not None
        [obj] = emu.list("scalingtargets.autoscaler.dev", "default")
        assert not list(pruned_fields(obj, schema, root=True)), "the CRD would prune activation's fields"
        assert not custom_resource_errors(obj, schema)
        # A restarted service starts from the same last active time (the cooldown is not reset).
        assert restore(status, last_active + 100).target.last_active_time == last_active
        syncs = manager.running[("default", "worker")].reconciler.syncs
        await eventually(lambda: manager.running[("default", "worker")].reconciler.syncs >= syncs + 3, what="syncs")
        assert replicas_of(emu, "worker") == 0, "inactive at idle: it stays"


def test_a_status_written_while_active_restores_as_active_until_the_restore() -> None:
    status = {
        "conditions": [{"type": "Active", "status": "True", "reason": "ScalerActive", "message": ""}],
        "lastActiveTime": "2027-01-15T08:00:00Z",  # stale: the service writes none while active
    }
    assert restore(status, 1_900_000_000.5).target.last_active_time == 1_900_000_000.5
    inactive = {"conditions": [{"type": "Active", "status": "False", "reason": "ScalerCooldown", "message": ""}]}
    at = "2027-01-15T08:00:00.25Z"
    assert restore({**inactive, "lastActiveTime": at}, 1_900_000_000.0).target.last_active_time == parse_rfc3339(at)
    assert restore(inactive, 1_900_000_000.0).target.last_active_time is None
