"""A pause in the service, against the emulator, set as a person sets it: the real ``kubectl annotate st web
autoscaler.dev/paused-replicas=2`` scales the workload to 2 and holds it there whatever the metrics say;
``kubectl get st`` shows the pause (PAUSED column), and so do the status (condition Paused, status.pause,
which fits the CRD's schema and restores after a restart) and the service's metrics
(autoscaler_target_paused, autoscaler_target_paused_since_seconds). Removing the annotation resumes it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from autoscaler.core.pause_state import PauseMode
from autoscaler.core.settings import ControllerSettings
from autoscaler.service.sync.status.restore import restore
from autoscaler.service.telemetry.metrics import ServiceMetrics
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.emulator.kubectl import Kubectl, table
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
from tests.service.test_metrics import series

pytestmark = pytest.mark.kubectl


@pytest.fixture
async def emu() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.5, controllers=[WorkloadController(PodLifecycle())]) as emulator:
        emulator.install_crd(CRD)
        yield emulator


def paused(emu: KubeEmulator) -> tuple[str, str] | None:
    found = condition(status_of(emu, "web"), "Paused")
    return None if found is None else (found["status"], found["reason"])


async def test_kubectl_annotate_pauses_at_a_count_and_removing_it_resumes(emu: KubeEmulator, tmp_path: Path) -> None:
    kubectl = Kubectl(emu, tmp_path)
    emu.create(deployment("web", 3))
    emu.create(target("web", "web"))
    queue = FakeMetrics()
    queue.set("queue", 50)  # 50 against 10 per replica: 5
    metrics = ServiceMetrics(process_metrics=False)
    schema = crd_version_schema(load_documents(CRD)[0], "v1alpha1")
    async with running_manager(
        emu, queue.read_many, settings=ControllerSettings(), period=0.3, jitter=0.0, batch_window=0.05, metrics=metrics
    ) as manager:
        await eventually(lambda: replicas_of(emu, "web") == 5, what="the first scale-up")

        await kubectl("annotate", "st", "web", "autoscaler.dev/paused-replicas=2")
        await eventually(lambda: replicas_of(emu, "web") == 2, what="the paused count written")
        await eventually(lambda: paused(emu) == ("True", "ScalingTargetPaused"), what="the Paused condition")
        status = status_of(emu, "web")
        assert status["pause"]["mode"] == "replicas" and status["pause"]["replicas"] == 2
        await eventually(lambda: status_of(emu, "web")["pause"].get("reached") is True, what="the count reached")
        pause = status_of(emu, "web")["pause"]
        rows = table((await kubectl("get", "st")).out)
        assert rows[0] == ["NAME", "TARGET", "MIN", "MAX", "CURRENT", "DESIRED", "PAUSED", "ACTIVE", "REASON", "AGE"]
        assert next(row for row in rows if row[0] == "web")[6] == "replicas"
        paused_series = {(("mode", "replicas"), ("name", "web"), ("namespace", "default")): 1.0}
        await eventually(lambda: series(metrics, "autoscaler_target_paused") == paused_series, what="the gauge")
        [since] = series(metrics, "autoscaler_target_paused_since_seconds").values()

        queue.set("queue", 90)  # would be 9: held at 2
        syncs = manager.running[("default", "web")].reconciler.syncs
        await eventually(lambda: manager.running[("default", "web")].reconciler.syncs >= syncs + 3, what="syncs")
        assert replicas_of(emu, "web") == 2
        explanation = status_of(emu, "web")["lastDecision"]["explanation"]
        assert any(line.startswith("Would scale 2 → 4; held: paused at 2 replicas since") for line in explanation)

        [obj] = emu.list("scalingtargets.autoscaler.dev", "default")
        assert not list(pruned_fields(obj, schema, root=True)), "the CRD would prune the pause's fields"
        assert not custom_resource_errors(obj, schema)
        # A restarted service starts from the same pause, since the same time (and does not write 2 again).
        restored = restore(status_of(emu, "web"), since + 3600).target.pause
        assert restored is not None and (restored.mode, restored.replicas, restored.reached) == (
            PauseMode.REPLICAS,
            2,
            True,
        )
        assert restored.since == pytest.approx(since) and pause["since"].startswith(status["pause"]["since"][:19])

        await kubectl("annotate", "st", "web", "autoscaler.dev/paused-replicas-")
        await eventually(lambda: replicas_of(emu, "web") == 4, what="the resumed scale-up (2 → 4, at most 2 × 2)")
        assert paused(emu) == ("False", "ScalingTargetResumed")  # recorded with the scale write, before it

        def reasons() -> list[str]:
            return [e["reason"] for e in emu.list("events", "default") if e["involvedObject"]["name"] == "web"]

        # The Events are posted after the write (the status recorded before it already says Resumed).
        await eventually(lambda: "ScalingTargetResumed" in reasons(), what="the ScalingTargetResumed Event")
        assert "ScalingTargetPaused" in reasons()
        await eventually(lambda: "pause" not in status_of(emu, "web"), what="status.pause dropped")
        await eventually(lambda: series(metrics, "autoscaler_target_paused") == {}, what="the paused series gone")
