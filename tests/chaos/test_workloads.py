"""What users do to the scaled workload (F16), with the real kubectl: scale it to 0, delete it, replace it
under another name. No crash; HPA semantics for 0 (autoscaling paused, ScalingActive False /
ScalingDisabled, nothing scaled up); a missing workload is AbleToScale False / FailedGetScale with an
Event; everything resumes by itself once the workload is back."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import yaml

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.service import ServiceProcess, wait_until
from tests.chaos.world import condition, kubectl, replicas_of, set_load, status_of, target
from tests.service.cluster import deployment

FAST = {"scaleUp": {"policies": [{"type": "Pods", "value": 10, "periodSeconds": 1}]}}


async def scaling(chaos: Chaos, exporter: MetricsExporter, prometheus: PrometheusSandbox) -> ServiceProcess:
    """web scaled by the service to 4 for a load of 40 (10 per pod)."""
    await set_load(exporter, prometheus, 40)
    chaos.cluster.create(deployment("web", 2))
    chaos.cluster.create(target("web", behavior=FAST))
    instance = await chaos.service("a")
    await wait_until(lambda: replicas_of(chaos.cluster, "web") == 4, 30, "the first scale to 4")
    return instance


async def create(cluster: KubeEmulator, workdir: Path, obj: dict[str, object]) -> None:
    path = workdir / "object.yaml"
    path.write_text(yaml.safe_dump(obj))
    await kubectl(cluster, workdir, "create", "--validate=false", "-f", str(path))  # the emulator serves no OpenAPI


async def test_f16_a_workload_scaled_to_zero_by_a_user_pauses_autoscaling(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    instance = await scaling(chaos, exporter, prometheus)
    await kubectl(cluster, tmp_path, "scale", "deployment/web", "--replicas=0")
    await wait_until(
        lambda: condition(cluster, "web", "ScalingActive").get("reason") == "ScalingDisabled",
        15,
        "ScalingActive False / ScalingDisabled",
    )
    assert condition(cluster, "web", "ScalingActive")["status"] == "False"
    paused = time.monotonic()
    await asyncio.sleep(3)  # three periods with a load that asks for 4
    assert replicas_of(cluster, "web") == 0, "autoscaling stays paused while the user keeps it at 0"
    assert not instance.relay.requests(lambda line: line.startswith("PATCH") and "/scale" in line, since=paused)
    await kubectl(cluster, tmp_path, "scale", "deployment/web", "--replicas=1")
    await wait_until(lambda: replicas_of(cluster, "web") == 4, 15, "autoscaling resumes")
    assert instance.alive() and not instance.tracebacks()


async def test_f16_a_deleted_workload_is_reported_and_its_return_resumes_scaling(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    instance = await scaling(chaos, exporter, prometheus)
    await kubectl(cluster, tmp_path, "delete", "deployment", "web")
    await wait_until(
        lambda: condition(cluster, "web", "AbleToScale").get("reason") == "FailedGetScale",
        15,
        "AbleToScale False / FailedGetScale",
    )
    assert 'deployments.apps "web" not found' in condition(cluster, "web", "AbleToScale")["message"]
    assert cluster.events("default", involved_name="web", reason="FailedGetScale")
    await create(cluster, tmp_path, deployment("web", 1))
    await wait_until(lambda: replicas_of(cluster, "web") == 4, 15, "the recreated workload is scaled")
    await wait_until(lambda: condition(cluster, "web", "AbleToScale").get("status") == "True", 15, "AbleToScale True")
    assert instance.alive() and not instance.tracebacks()


async def test_f16_a_workload_replaced_under_another_name_is_followed_when_the_target_is_edited(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    instance = await scaling(chaos, exporter, prometheus)
    await create(cluster, tmp_path, deployment("web-v2", 1))
    await kubectl(cluster, tmp_path, "delete", "deployment", "web")
    await wait_until(
        lambda: condition(cluster, "web", "AbleToScale").get("reason") == "FailedGetScale",
        15,
        "the old name is reported missing",
    )
    await kubectl(
        cluster,
        tmp_path,
        "patch",
        "scalingtargets.autoscaler.dev",
        "web",
        "--type=merge",
        "-p",
        '{"spec": {"scaleTargetRef": {"name": "web-v2"}}}',
    )
    await wait_until(lambda: replicas_of(cluster, "web-v2") == 4, 15, "the new name is scaled")
    await wait_until(lambda: status_of(cluster, "web").get("currentReplicas") == 4, 15, "the status follows")
    assert instance.alive() and not instance.tracebacks()
