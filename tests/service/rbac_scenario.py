"""The scenario the RBAC coverage test (test_rbac_coverage.py) runs: the real service
(``autoscaler.service.app.Service``: the Kubernetes client, watch caches, leader election, reconcilers,
Events, the Prometheus client) against the Kubernetes API emulator with the settings file and environment
of the shipped Deployment, through every Kubernetes call the code makes:

- targets valid and invalid (InvalidSpec: a status write and an Event);
- a scale-up whose first PATCH of ``deployments/scale`` gets 409, then a GET of the scale and a retry;
- a metric that keeps failing (the same Event twice: created, then patched to aggregate it);
- a StatefulSet target, resolved through discovery and read and written through ``statefulsets/scale``;
- an HVPA target that scales its Deployment and pins its VerticalPodAutoscaler;
- leader election: the Lease created, renewed, and released at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from autoscaler.cli import build_parser
from autoscaler.cli.run import flag_overrides
from autoscaler.service.app import Service
from autoscaler.service.settings import load_service_settings
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.manifests import Doc, find, one, settings_text
from tests.service.cluster import CRD, VPA_CRD, condition, deployment, eventually, replicas_of, status_of, vpa
from tests.service.keda import SCALED_OBJECT_CRD

NAMESPACE = "shop"  # where the workloads and targets live


QUEUES = {"sum(queue_web)": "40", "sum(queue_db)": "30"}  # sum(queue_stuck) has no series: the metric fails


class FakePrometheus:
    """``/api/v1/query`` answering each query from QUEUES (an empty vector for any other), ``/-/ready``."""

    def __init__(self) -> None:
        self.url = ""
        self.queries: list[str] = []
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> FakePrometheus:
        app = web.Application()
        app.router.add_post("/api/v1/query", self._query)
        app.router.add_get("/-/ready", self._ready)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _query(self, request: web.Request) -> web.Response:
        form = await request.post()
        # A live query has no time=: Prometheus answers at its own "now".
        query, at = str(form["query"]), float(str(form.get("time") or time.time()))
        self.queries.append(query)
        value = QUEUES.get(query)
        result = [] if value is None else [{"metric": {}, "value": [at, value]}]
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": result}})

    async def _ready(self, request: web.Request) -> web.Response:
        return web.Response(text="Prometheus Server is Ready.\n")


def external(name: str) -> dict[str, Any]:
    return {
        "type": "External",
        "external": {
            "metric": {"name": name},
            "query": f"sum({name})",
            "target": {"type": "AverageValue", "averageValue": "10"},
        },
    }


def scaling_target(name: str, kind: str, workload: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaler.dev/v1alpha1",
        "kind": "ScalingTarget",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": workload},
            "minReplicas": 1,
            "maxReplicas": 10,
            **spec,
        },
    }


def statefulset(name: str, replicas: int) -> dict[str, Any]:
    obj = deployment(name, replicas, namespace=NAMESPACE)
    obj["kind"] = "StatefulSet"
    obj["spec"]["serviceName"] = name
    return obj


def hvpa_workload() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A Deployment of one 300m pod, a VPA recommending 1200m, and an HVPA target over both (1 → 2 pods of
    600m, and the VPA pinned at 600m)."""
    workload = deployment("api", 1, namespace=NAMESPACE, cpu="300m")
    workload["spec"]["template"]["spec"]["containers"][0]["name"] = "main"
    recommender = vpa("api", "api", cpu="1200m", memory="1Gi", namespace=NAMESPACE)
    intervals = [
        {"maxReplicas": 1, "maxResources": {"cpu": "500m", "memory": "2Gi"}},
        {"maxReplicas": 2, "maxResources": {"cpu": "1", "memory": "4Gi"}},
        {"maxReplicas": 3, "maxResources": {"cpu": "2", "memory": "8Gi"}},
    ]
    target = scaling_target(
        "api",
        "Deployment",
        "api",
        maxReplicas=3,
        hvpa={"sources": ["vpa"], "scalingIntervals": intervals, "containers": [{"name": "main"}]},
    )
    return workload, recommender, target


@dataclass
class Run:
    emulator: KubeEmulator
    manifests: list[Doc]
    lease: tuple[str, str]  # namespace, name
    probes: dict[str, int] = field(default_factory=dict)  # probe path -> HTTP status while running


@contextlib.asynccontextmanager
async def service_from_manifests(
    manifests: list[Doc], tmp_path: Path, deployment_name: str = "autoscaler"
) -> AsyncIterator[tuple[KubeEmulator, Service, tuple[str, str], Callable[[], Any]]]:
    """The emulator, and the real service configured as the shipped Deployment ``deployment_name`` configures
    it: the ConfigMap's settings file, the container's environment and command line, the pod's namespace for
    the Lease. Only what a test must change is overridden: where the API server and Prometheus are, the
    timings, the HTTP port."""
    deployment_doc = one(manifests, "Deployment", deployment_name)
    pod_namespace = deployment_doc["metadata"]["namespace"]
    async with (
        FakePrometheus() as prometheus,
        KubeEmulator(
            token="service-account-token", bookmark_interval=0.5, controllers=[WorkloadController(PodLifecycle())]
        ) as emu,
    ):
        emu.install_crd(CRD)
        emu.install_crd(VPA_CRD)
        emu.install_crd(SCALED_OBJECT_CRD)  # watched (never two writers), none exists
        for namespace in find(manifests, "Namespace"):  # the Lease's namespace exists, as installed
            emu.create(namespace)
        config = tmp_path / "autoscaler.yaml"
        config.write_text(settings_text(manifests))
        container = deployment_doc["spec"]["template"]["spec"]["containers"][0]
        flags: dict[tuple[str, ...], Any] = {
            **flag_overrides(build_parser().parse_args(container["args"])),  # --shard, for a shard's instance
            ("prometheus", "url"): prometheus.url,
            ("prometheus", "retries"): 0,
            ("kubernetes", "kubeconfig"): str(emu.write_kubeconfig(tmp_path / "kubeconfig")),
            ("sync", "periodSeconds"): 1,
            ("sync", "jitter"): 0.0,
            ("sync", "batchWindowSeconds"): 0.05,
            ("http", "address"): "127.0.0.1",
            ("http", "port"): 0,
            # in a pod, an unset leaseNamespace is the pod's own namespace (read from the service account)
            ("leaderElection", "leaseNamespace"): pod_namespace,
            ("leaderElection", "leaseDurationSeconds"): 2,
            ("leaderElection", "renewDeadlineSeconds"): 1.5,
            ("leaderElection", "retryPeriodSeconds"): 0.2,
            ("logging", "level"): "warning",
        }
        environment = {e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e}
        settings = load_service_settings(str(config), flags=flags, environ=environment)
        assert settings.serving.leader_election.enabled, "the shipped settings must elect a leader (2 replicas)"
        service = Service(settings, identity="autoscaler-7d9f_1")
        # The test's own objects go in through the in-process API: the request log holds the service's only.
        assert emu.requests.count() == 0
        stop = asyncio.Event()
        task = asyncio.create_task(service.run(stop))

        async def shutdown() -> None:
            stop.set()
            await asyncio.wait_for(task, 15)

        try:
            lease = settings.serving.sharding.lease_name(settings.serving.leader_election.lease_name)
            yield emu, service, (pod_namespace, lease), shutdown
        finally:
            if not task.done():
                stop.set()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, 15)


def seed_scenario(emu: KubeEmulator, labels: dict[str, str] | None = None) -> None:
    """The workloads and their targets (labelled ``labels``: a shard's, when given)."""

    def labelled(obj: dict[str, Any]) -> dict[str, Any]:
        if labels:
            obj["metadata"]["labels"] = dict(labels)
        return obj

    emu.create(deployment("web", 2, namespace=NAMESPACE))
    emu.create(labelled(scaling_target("web", "Deployment", "web", metrics=[external("queue_web")])))  # 40/10 → 4
    emu.create(deployment("stuck", 2, namespace=NAMESPACE))
    emu.create(labelled(scaling_target("stuck", "Deployment", "stuck", metrics=[external("queue_stuck")])))  # no value
    # Admitted by the CRD (its schema and CEL rules), refused by the service's validation: a target value must be
    # positive (a quantity's sign is beyond the CRD's rules).
    broken = scaling_target("broken", "Deployment", "stuck", metrics=[external("queue_web")])
    broken["spec"]["metrics"][0]["external"]["target"] = {"type": "Value", "value": "0"}
    emu.create(labelled(broken))
    emu.create(statefulset("db", 1))
    emu.create(labelled(scaling_target("db", "StatefulSet", "db", metrics=[external("queue_db")])))  # 30/10 → 3
    workload, recommender, target = hvpa_workload()
    emu.create(workload)
    emu.seed(recommender)  # seeded: a create would drop the VPA's status (its recommendation)
    emu.create(labelled(target))
    emu.faults.conflicts(1, verb="patch", resource="deployments/scale", name="web")


async def run_scenario(
    manifests: list[Doc], tmp_path: Path, deployment_name: str = "autoscaler", labels: dict[str, str] | None = None
) -> Run:
    async with service_from_manifests(manifests, tmp_path, deployment_name) as (emu, service, lease, shutdown):
        seed_scenario(emu, labels)

        def stuck_event_count() -> int:
            events = emu.events(NAMESPACE, involved_name="stuck", reason="FailedGetExternalMetric")
            return max((int(e.get("count") or 0) for e in events), default=0)

        def vpa_pinned() -> bool:
            obj = emu.get("verticalpodautoscalers.autoscaling.k8s.io", "api", NAMESPACE)
            return obj is not None and "minAllowed" in obj["spec"]["resourcePolicy"]["containerPolicies"][0]

        await eventually(lambda: replicas_of(emu, "web", NAMESPACE) == 4, timeout=15, what="web scaled after a 409")
        await eventually(
            lambda: replicas_of(emu, "api", NAMESPACE) == 2 and vpa_pinned(),
            timeout=10,
            what="HVPA scaled api and pinned its VPA",
        )
        await eventually(
            lambda: (emu.get("statefulsets", "db", NAMESPACE) or {}).get("spec", {}).get("replicas") == 3,
            timeout=10,
            what="the StatefulSet scaled",
        )
        await eventually(lambda: stuck_event_count() >= 2, timeout=10, what="a repeated Event aggregated")
        await eventually(
            lambda: (
                (condition(status_of(emu, "broken", NAMESPACE), "ScalingActive") or {}).get("reason") == "InvalidSpec"
            ),
            timeout=10,
            what="the invalid target's status",
        )
        await eventually(lambda: emu.requests.count("update", "leases") >= 2, timeout=10, what="lease renewals")
        run = Run(emu, manifests, lease)
        assert service.http is not None
        async with aiohttp.ClientSession() as session:
            for probe in ("/healthz", "/readyz"):
                async with session.get(f"http://127.0.0.1:{service.http.port}{probe}") as answer:
                    run.probes[probe] = answer.status
        updates = emu.requests.count("update", "leases")
        await shutdown()
        assert emu.requests.count("update", "leases") > updates, "the Lease was not released at shutdown"
        lease_obj = emu.get("leases.coordination.k8s.io", lease[1], lease[0])
        assert lease_obj is not None and lease_obj["spec"]["holderIdentity"] == "", "the Lease was not released"
        return run
