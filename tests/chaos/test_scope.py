"""Issue 37, item 12: whatever the API server sends, the service acts only on the objects of its own scope.

The service is limited to namespace ``team-a`` (``kubernetes.namespaces``) and to shard ``a``
(``sharding.shard``). Between it and the API emulator, :class:`~tests.chaos.leaky_api.LeakyApi` answers
every namespaced LIST and WATCH with the whole cluster's objects, selector dropped — the leak the emulator's
own replay once made. Two targets outside the scope are there to be leaked: ``web`` in ``team-b``, and
``theirs`` in ``team-a`` labelled for shard ``b``; both would scale on the same load as the service's own.

Promise: the service reconciles its own target, and never writes the others' status or scale, nor an Event
about them; it says once per cache that the API server sent what it did not ask for.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import yaml

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.leaky_api import LeakyApi
from tests.chaos.relay import TcpRelay, requests_matching
from tests.chaos.service import ServiceProcess, wait_until
from tests.chaos.world import replicas_of, set_load, status_of, target
from tests.service.cluster import deployment

KEY = "autoscaler.dev/shard"
WRITES = requests_matching(r"^(PATCH|PUT|POST|DELETE) ")


@pytest.fixture
async def leaky(cluster: KubeEmulator) -> AsyncIterator[LeakyApi]:
    async with LeakyApi(cluster.url) as running:
        yield running


async def service_behind(chaos: Chaos, leaky: LeakyApi, name: str, **overrides: object) -> ServiceProcess:
    """One ``autoscaler run`` whose API server is the leaking proxy (through its own relay, which records
    every request line it sends)."""
    relay = await TcpRelay("127.0.0.1", leaky.port).start()
    chaos.relays.append(relay)
    kubeconfig = chaos.cluster.kubeconfig()
    kubeconfig["clusters"][0]["cluster"]["server"] = relay.url
    path = chaos.workdir / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    settings = chaos.settings(**overrides)
    settings["kubernetes"] = {**settings.get("kubernetes", {}), "kubeconfig": str(path)}
    process = ServiceProcess(chaos.workdir, name, settings, relay)
    chaos.instances.append(process)
    return process.start()


async def test_objects_a_leaking_api_sends_from_outside_the_scope_are_never_acted_on(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, leaky: LeakyApi
) -> None:
    """Failed before the scope guard: the service reconciled team-b's target and shard b's (it wrote their
    statuses and Events, and scaled shard b's ``theirs`` to 4)."""
    await set_load(exporter, prometheus, 40)  # 4 pods for every target here
    for namespace, name, shard in (("team-a", "web", "a"), ("team-b", "web", "a"), ("team-a", "theirs", "b")):
        cluster.create(deployment(name, 2, namespace=namespace))
        cluster.create(target(name, namespace=namespace, labels={KEY: shard}))
    service = await service_behind(chaos, leaky, "a", kubernetes={"namespaces": ["team-a"]}, sharding={"shard": "a"})
    await wait_until(lambda: replicas_of(cluster, "web", "team-a") == 4, 40, "the service's own target to scale")
    await wait_until(lambda: status_of(cluster, "web", "team-a").get("currentReplicas") == 4, 20, "its status")
    assert leaky.widened > 0  # the service's LISTs and WATCHes were answered with the whole cluster
    await asyncio.sleep(3)  # three more sync periods for anything leaked to be acted on

    assert replicas_of(cluster, "web", "team-b") == 2
    assert replicas_of(cluster, "theirs", "team-a") == 2
    assert status_of(cluster, "web", "team-b") == {}
    assert status_of(cluster, "theirs", "team-a") == {}
    assert cluster.events("team-b") == []
    assert cluster.events("team-a", involved_name="theirs") == []
    written = [line for _, line in service.relay.requests(WRITES)]
    assert not [line for line in written if "/namespaces/team-b/" in line or "/theirs" in line], written
    dropped = service.events("objects outside this instance's scope: left out")
    caches = {line["resource"] for line in dropped}
    assert caches >= {"scalingtargets.autoscaler.dev in team-a", "deployments.apps in team-a", "pods in team-a"}
    assert len(dropped) == len(caches)  # once per cache
    assert not service.tracebacks()
