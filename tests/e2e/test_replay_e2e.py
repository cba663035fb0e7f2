"""The proof that the service and ``autoscaler simulate`` decide alike: a live ``autoscaler run --record``
(the Kubernetes API emulator, a real Prometheus) is recorded while its load rises and falls; its syncs
are turned into a scenario (``autoscaler scenario --from-recording``), which the real
``autoscaler simulate`` command replays. Every step decides exactly what the service decided: the
replicas, the proposal, the limit, the conditions and the Events."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.e2e.conftest import ROOT, until
from tests.service.cluster import CRD, deployment, replicas_of, status_of

pytestmark = pytest.mark.prometheus

SPEC: dict[str, Any] = {
    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
    "minReplicas": 1,
    "maxReplicas": 12,
    "metrics": [
        {
            "type": "External",
            "external": {
                "metric": {"name": "queue_depth"},
                "query": 'sum(queue_depth{queue="jobs"})',
                "target": {"type": "AverageValue", "averageValue": "10"},
            },
        },
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "inflight"},
                "query": "sum by (namespace, pod) (web_inflight{<<scope>>})",
                "target": {"type": "AverageValue", "averageValue": "8"},
            },
        },
    ],
    "behavior": {
        "scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 3}]},
        "scaleDown": {"stabilizationWindowSeconds": 4},
    },
}
# (queue depth, in-flight requests over all pods, seconds held)
LOAD = [(20, 10, 4), (70, 30, 6), (110, 90, 8), (30, 20, 6), (5, 4, 8)]


@pytest.fixture
async def cluster() -> AsyncIterator[KubeEmulator]:
    """Pods take a moment to start and to become Ready, so the service sees unready and missing pods."""
    lifecycle = PodLifecycle(start_delay=0.4, ready_delay=1.2)
    async with KubeEmulator(bookmark_interval=1.0, controllers=[WorkloadController(lifecycle)]) as emu:
        emu.install_crd(CRD)
        yield emu


# A new pod reports its first in-flight sample this long after it starts running (an application warming up),
# so that syncs in between see a pod without a sample, however the machine's load shifts the timings.
FIRST_SAMPLE_AFTER = 2.5


async def serve_inflight(cluster: KubeEmulator, exporter: MetricsExporter, total: list[float]) -> None:
    """Each running pod of web reports its share of the in-flight requests (a pod not yet running, or
    running for less than FIRST_SAMPLE_AFTER, none)."""
    shown: set[str] = set()
    running_since: dict[str, float] = {}
    loop = asyncio.get_running_loop()
    while True:
        running = sorted(
            p["metadata"]["name"]
            for p in cluster.list("pods", "default")
            if p["metadata"]["name"].startswith("web-") and (p.get("status") or {}).get("phase") == "Running"
        )
        now = loop.time()
        running_since = {name: running_since.get(name, now) for name in running}
        reporting = [name for name in running if now - running_since[name] >= FIRST_SAMPLE_AFTER]
        for name in shown - set(reporting):
            exporter.remove("web_inflight", {"namespace": "default", "pod": name})
        for name in reporting:
            exporter.set("web_inflight", {"namespace": "default", "pod": name}, total[0] / len(reporting))
        shown = set(reporting)
        await asyncio.sleep(0.2)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


async def test_simulate_replays_a_recorded_run_decision_for_decision(
    cluster: KubeEmulator, prometheus: PrometheusSandbox, exporter: MetricsExporter, services: Any, tmp_path: Path
) -> None:
    exporter.set("queue_depth", {"queue": "jobs"}, LOAD[0][0])
    total = [float(LOAD[0][1])]
    cluster.create(deployment("web", 2))
    cluster.create(
        {
            "apiVersion": "autoscaler.dev/v1alpha1",
            "kind": "ScalingTarget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": SPEC,
        }
    )
    recording = tmp_path / "recording.jsonl"
    inflight = asyncio.create_task(serve_inflight(cluster, exporter, total))
    try:
        service = services("one", cluster, prometheus, args=["--record", str(recording)])
        await until(lambda: "currentReplicas" in status_of(cluster, "web"), what="the first decision")
        for queue, requests, seconds in LOAD:
            exporter.set("queue_depth", {"queue": "jobs"}, queue)
            total[0] = requests
            await asyncio.sleep(seconds)
        assert await asyncio.to_thread(service.terminate) == 0
    finally:
        inflight.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await inflight
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    decisions = [line["decision"] for line in lines if line["target"] == "default/web"]

    scenario = tmp_path / "scenario.yaml"
    converted = await asyncio.to_thread(
        run,
        "-m",
        "autoscaler",
        "scenario",
        "--from-recording",
        str(recording),
        "--target",
        "default/web",
        "--output",
        str(scenario),
    )
    assert converted.returncode == 0, converted.stderr
    simulated = await asyncio.to_thread(run, "-m", "autoscaler", "simulate", str(scenario), "--output", "json")
    assert simulated.returncode == 0, simulated.stderr
    steps = [json.loads(line) for line in simulated.stdout.splitlines()]

    assert len(steps) == len(decisions)
    for index, (step, decided) in enumerate(zip(steps, decisions, strict=True)):
        assert {key: step[key] for key in decided} == decided, f"sync {index} differs"
    # The run was rich enough to mean something: it scaled both ways, a policy and a window held it back,
    # and some syncs saw pods that were not ready or had no sample yet.
    assert replicas_of(cluster, "web") < max(d["replicas"] for d in decisions)
    assert {d["limitedBy"] for d in decisions} >= {"ScaleUpLimit", "ScaleDownStabilized"}
    assert any(e["reason"] == "SuccessfulRescale" for d in decisions for e in d["events"])
    pods_seen = [pod for line in lines for pod in line["step"]["pods"]]
    assert any(pod["ready"] is not True for pod in pods_seen)
    assert any(len(line["step"]["readings"][1].get("pods", {})) < len(line["step"]["pods"]) for line in lines)
