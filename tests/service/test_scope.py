"""The scope guard of the watch caches (autoscaler/service/cluster/scope.py): what each cache may hold, whatever the
API server sends. The service-level test is tests/chaos/test_scope.py (a proxy that leaks on the wire)."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio.client import ApiClient
from structlog.testing import capture_logs

from autoscaler.kube.api import KubeApi
from autoscaler.service.cluster.scope import Scope, scoped_retrim, scoped_trim
from autoscaler.service.cluster.sharding import ShardingSettings
from autoscaler.service.cluster.takeover import statuses_at_takeover
from kube_emulator import KubeEmulator
from tests.chaos.leaky_api import LeakyApi
from tests.service.cluster import CRD, target

KEY = "autoscaler.dev/shard"


def obj(namespace: str, name: str = "web", labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": namespace, "name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"metadata": meta}


def test_a_namespaced_cache_admits_its_namespace_only() -> None:
    scope = Scope("pods in team-a", "team-a")
    assert scope.admits(obj("team-a"))
    assert not scope.admits(obj("team-b"))
    assert not scope.admits(obj(""))  # a cluster-scoped object in a namespaced cache
    assert scope.left_out == 2


def test_a_cluster_wide_cache_admits_every_namespace() -> None:
    scope = Scope("pods", None)
    assert scope.admits(obj("team-a")) and scope.admits(obj("team-b"))
    assert scope.left_out == 0


def test_a_target_cache_admits_its_shard_only() -> None:
    shard_a = Scope("scalingtargets", "team-a", ShardingSettings("a"))
    assert shard_a.admits(obj("team-a", labels={KEY: "a", "app": "web"}))
    assert not shard_a.admits(obj("team-a", labels={KEY: "b"}))
    assert not shard_a.admits(obj("team-a"))  # unlabelled: the unsharded instance's
    assert not shard_a.admits(obj("team-b", labels={KEY: "a"}))  # its shard, another namespace
    unsharded = Scope("scalingtargets", None, ShardingSettings())
    assert unsharded.admits(obj("team-a")) and unsharded.admits(obj("team-a", labels={"app": "web"}))
    assert not unsharded.admits(obj("team-a", labels={KEY: "a"}))


def test_an_object_without_metadata_is_left_to_the_trimmer() -> None:
    assert Scope("pods in team-a", "team-a").admits({"kind": "Pod"})


def test_trimmers_see_only_what_the_scope_admits() -> None:
    scope = Scope("scalingtargets in team-a", "team-a", ShardingSettings("a"))
    seen: list[str] = []

    def trim(item: Any) -> str:
        seen.append(item["metadata"]["name"])
        return str(item["metadata"]["name"])

    def retrim(known: str, item: Any) -> str:
        return f"{known}+{trim(item)}"

    trimmed = scoped_trim(trim, scope)
    assert trimmed(obj("team-a", "ours", {KEY: "a"})) == "ours"
    assert trimmed(obj("team-b", "theirs", {KEY: "a"})) is None
    again = scoped_retrim(retrim, scope)
    assert again("ours", obj("team-a", "ours", {KEY: "a"})) == "ours+ours"
    # A known target relabelled for another shard leaves the cache (None), as the server's DELETED would.
    assert again("ours", obj("team-a", "ours", {KEY: "b"})) is None
    assert seen == ["ours", "ours"]
    assert scope.left_out == 2


def test_the_first_object_left_out_is_a_warning_the_rest_debug() -> None:
    scope = Scope("pods in team-a", "team-a")
    with capture_logs() as logs:
        for name in ("p1", "p2", "p3"):
            scope.admits(obj("team-b", name))
    assert [(line["log_level"], line["name"]) for line in logs] == [("warning", "p1"), ("debug", "p2"), ("debug", "p3")]
    assert {line["resource"] for line in logs} == {"pods in team-a"}


async def test_the_takeover_read_leaves_out_what_a_leaking_server_adds() -> None:
    """The new leader's read of every target's status (service/cluster/takeover.py) goes through the same guard:
    the proxy answers its LIST of team-a's shard-a targets with the whole cluster's."""
    async with KubeEmulator() as emulator, LeakyApi(emulator.url) as leaky:
        emulator.install_crd(CRD)
        for namespace, name, shard in (("team-a", "web", "a"), ("team-b", "web", "a"), ("team-a", "theirs", "b")):
            body = target(name, name, namespace=namespace)
            body["metadata"]["labels"] = {KEY: shard}
            emulator.create(body)
        configuration = emulator.client_configuration()
        configuration.host = f"http://127.0.0.1:{leaky.port}"
        async with ApiClient(configuration=configuration) as client:
            statuses = await statuses_at_takeover(KubeApi(client), ("team-a",), ShardingSettings("a"), {})
    assert leaky.widened == 1
    assert set(statuses) == {("team-a", "web")}
