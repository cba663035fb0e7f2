"""Issue 37, item 13: etcd is restored from a snapshot under a running service, which converges on the
restored objects.

The snapshot holds the target at ``maxReplicas: 3`` and its Deployment at 3 replicas (the load asks for 4).
After it, the target is raised to 6 and the service scales to 4; then the snapshot is restored — the target
is at 3 again, the Deployment at 3 — and the API servers restart (every watch ends). Two ways to restore:

* as ``etcdutl snapshot restore`` does by default: the resourceVersions go back, and the service resumes
  its watches from versions the API server has not reached. The API server accepts such a watch and sends
  nothing on it, not even a bookmark (kubernetes/kubernetes#107457; the emulator does the same since this
  item): the service notices the silence of watches that were bookmarked before
  (``kubernetes.watchSilenceSeconds``, 3 s here) and relists;
* with ``--bump-revision`` and ``--mark-compacted`` (what docs/operations.md asks of an operator): every
  version the service saw is older than the restored server's window, its watches are answered 410, and it
  relists at once.

Promise, either way: the service relists, then decides on the restored objects (it holds the Deployment at
3 under the restored limit and says why, then scales it down when the load drops); nothing it writes after
the restore comes from the objects as they were before it (no scale to 4, no status of 4 replicas).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.relay import requests_matching
from tests.chaos.service import wait_until
from tests.chaos.world import condition, replicas_of, set_load, status_of, target
from tests.service.cluster import deployment

LISTS = requests_matching(r"^GET \S*/(deployments|scalingtargets)\?(?!.*watch=true)")
FAST_SILENCE = {"kubernetes": {"watchSilenceSeconds": 3}}


def versions_since(cluster: KubeEmulator, resource: str, name: str, count: int) -> list[dict[str, Any]]:
    return cluster.history(resource, name)[count:]


@pytest.mark.parametrize("bump_revision", [0, 1_000_000], ids=["versions-go-back", "bumped-and-compacted"])
async def test_the_service_converges_on_a_restored_etcd(
    chaos: Chaos,
    cluster: KubeEmulator,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
    bump_revision: int,
) -> None:
    """versions-go-back failed before the emulator answered a watch from a version it had not reached as
    the API server does: it sent that watch bookmarks of the lower restored version, the service took
    them, never relisted, and went on deciding from maxReplicas 6 and 4 replicas that no longer existed."""
    await set_load(exporter, prometheus, 40)  # 4 pods of 10
    cluster.create(deployment("web", 2))
    cluster.create(target("web", max_replicas=3))
    service = await chaos.service("one", **FAST_SILENCE)
    await wait_until(lambda: status_of(cluster, "web").get("currentReplicas") == 3, 40, "3 replicas, the limit")
    await asyncio.sleep(2)  # the idle watches have been bookmarked (every second)
    snapshot = cluster.snapshot_etcd()

    cluster.patch("scalingtargets.autoscaler.dev", "web", {"spec": {"maxReplicas": 6}})
    await wait_until(lambda: status_of(cluster, "web").get("currentReplicas") == 4, 30, "the scale to 4 after it")
    deployment_versions = len(cluster.history("deployments", "web"))
    target_versions = len(cluster.history("scalingtargets.autoscaler.dev", "web"))
    restored_at = time.monotonic()
    await cluster.restore_etcd(snapshot, bump_revision=bump_revision)
    assert replicas_of(cluster, "web") == 3

    # It relists, and its decisions say what the restored objects say.
    await wait_until(lambda: service.relay.requests(LISTS, since=restored_at), 30, "a relist")
    await wait_until(
        lambda: (
            condition(cluster, "web", "ScalingLimited").get("reason") == "TooManyReplicas"
            and status_of(cluster, "web").get("currentReplicas") == 3
        ),
        30,
        "a status of the restored target at its restored limit",
    )
    await asyncio.sleep(3)  # three more periods: nothing writes 4 back
    assert replicas_of(cluster, "web") == 3
    deployment_writes = versions_since(cluster, "deployments", "web", deployment_versions)
    assert all(v["spec"]["replicas"] == 3 for v in deployment_writes), [
        v["spec"]["replicas"] for v in deployment_writes
    ]
    statuses = [
        v.get("status") or {} for v in versions_since(cluster, "scalingtargets.autoscaler.dev", "web", target_versions)
    ]
    assert all(s.get("currentReplicas") in (3, None) and s.get("desiredReplicas") in (3, None) for s in statuses), (
        statuses
    )

    # … and it goes on deciding on them.
    await set_load(exporter, prometheus, 20)
    await wait_until(lambda: replicas_of(cluster, "web") == 2, 30, "the scale down to 2")
    assert not service.tracebacks()
