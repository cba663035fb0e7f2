"""Never two writers (issue 43): a workload that an HPA or a KEDA ScaledObject scales is not scaled by its
ScalingTarget too. The manager against the API emulator through the real client: the HPA and the
ScaledObject are objects on the emulator, and what the service writes is what the emulator stored.
"""

from __future__ import annotations

from typing import Any

from autoscaler.core.other_autoscalers import TAKE_OVER_ANNOTATION, OtherAutoscaler, scaled_by
from autoscaler.service.cluster.other_autoscalers import AutoscalerIndex, trim_hpa, trim_scaled_object
from kube_emulator import KubeEmulator
from tests.service.cluster import FakeMetrics, condition, deployment, eventually, replicas_of, status_of, target
from tests.service.keda import SCALED_OBJECT_CRD, hpa, scaled_object
from tests.service.manager_setup import FAST_BEHAVIOR, make_manager, running


def taking_over(obj: dict[str, Any]) -> dict[str, Any]:
    """The target with the cut-over annotation (as ``autoscaler convert`` writes it)."""
    obj["metadata"]["annotations"] = {TAKE_OVER_ANNOTATION: "true"}
    return obj


def active(emu: KubeEmulator, name: str = "web") -> dict[str, Any]:
    return dict(condition(status_of(emu, name), "ScalingActive") or {})


def scale_writes(emu: KubeEmulator, name: str = "web") -> list[int]:
    """The replica counts of every stored version of the Deployment (a scale write makes a new one)."""
    return [version["spec"]["replicas"] for version in emu.history("deployments", name, "default")]


async def test_an_hpa_holds_the_target_until_it_is_deleted(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(hpa("web", "web"))
    emu.create(target("web", "web", behavior=FAST_BEHAVIOR))
    metrics = FakeMetrics()
    metrics.set("queue", 60)  # 60 / 10 per pod: 6 replicas wanted
    async with running(emu, metrics):
        await eventually(lambda: active(emu).get("reason") == "AnotherAutoscaler", what="ScalingActive False")
        reads = metrics.reads
        await eventually(lambda: metrics.reads >= reads + 4, what="more syncs")
        # No scale write while the HPA exists: the shadow decides (desiredReplicas) and writes nothing.
        assert replicas_of(emu, "web") == 2 and set(scale_writes(emu)) == {2}
        status = status_of(emu, "web")
        assert active(emu)["status"] == "False"
        assert "HorizontalPodAutoscaler default/web" in active(emu)["message"]
        assert status["desiredReplicas"] == 6
        explanation = status["lastDecision"]["explanation"]
        assert any(line.startswith("Scale up 2 → 6") for line in explanation), explanation
        assert any(line.startswith("Not written: HorizontalPodAutoscaler default/web") for line in explanation)
        events = emu.events("default", involved_name="web", reason="AnotherAutoscaler")
        assert len(events) == 1 and "HorizontalPodAutoscaler default/web" in events[0]["message"]
        # The HPA is deleted, but the cut-over is not agreed: the target still writes nothing, and says why.
        emu.delete("horizontalpodautoscalers", "web", "default")
        await eventually(lambda: "annotation" in active(emu).get("message", ""), what="awaiting the cut-over")
        reads = metrics.reads
        await eventually(lambda: metrics.reads >= reads + 3, what="more syncs")
        assert set(scale_writes(emu)) == {2}
        assert len(emu.events("default", involved_name="web", reason="AnotherAutoscaler")) == 2
        # The annotation agrees: the target takes over at its next sync, its history intact.
        history = status_of(emu, "web")["history"]
        emu.patch(
            "scalingtargets.autoscaler.dev",
            "web",
            {"metadata": {"annotations": {TAKE_OVER_ANNOTATION: "true"}}},
            namespace="default",
        )
        await eventually(lambda: replicas_of(emu, "web") == 6, what="the target scales once the cut-over is agreed")
        assert history["recommendations"], "the shadow's decision history was recorded"
        await eventually(lambda: active(emu).get("status") == "True", what="ScalingActive True again")


async def test_a_keda_owned_hpa_is_attributed_to_its_scaled_object(emu: KubeEmulator) -> None:
    emu.install_crd(SCALED_OBJECT_CRD)
    emu.create(deployment("web", 2))
    emu.create(scaled_object("web", "web"))
    emu.create(hpa("keda-hpa-web", "web", owner="web"))
    emu.create(taking_over(target("web", "web", behavior=FAST_BEHAVIOR)))
    metrics = FakeMetrics()
    metrics.set("queue", 60)
    async with running(emu, metrics):
        await eventually(lambda: active(emu).get("reason") == "AnotherAutoscaler", what="ScalingActive False")
        assert "ScaledObject default/web" in active(emu)["message"]
        assert "keda-hpa-web" not in active(emu)["message"]
        reads = metrics.reads
        await eventually(lambda: metrics.reads >= reads + 3, what="more syncs")
        assert set(scale_writes(emu)) == {2}
        # KEDA deletes its HPA with the ScaledObject (garbage collection): both go, the target takes over.
        emu.delete("scaledobjects.keda.sh", "web", "default")
        reads = metrics.reads
        await eventually(lambda: metrics.reads >= reads + 2, what="syncs after the ScaledObject went")
        assert set(scale_writes(emu)) == {2}, "the HPA KEDA created still scales the workload"
        emu.delete("horizontalpodautoscalers", "keda-hpa-web", "default")
        await eventually(lambda: replicas_of(emu, "web") == 6, what="the target scales once both are gone")


async def test_a_scaled_object_alone_holds_the_target(emu: KubeEmulator) -> None:
    emu.install_crd(SCALED_OBJECT_CRD)
    emu.create(deployment("web", 2))
    emu.create(scaled_object("web", "web"))
    emu.create(taking_over(target("web", "web", behavior=FAST_BEHAVIOR)))
    metrics = FakeMetrics()
    metrics.set("queue", 60)
    async with running(emu, metrics):
        await eventually(lambda: "ScaledObject default/web" in active(emu).get("message", ""), what="held")
        emu.delete("scaledobjects.keda.sh", "web", "default")
        await eventually(lambda: replicas_of(emu, "web") == 6, what="the target scales once it is gone")


async def test_without_the_keda_crd_targets_scale_and_other_workloads_hpas_do_not_matter(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(deployment("api", 2))
    emu.create(hpa("api", "api"))  # another workload's HPA
    emu.create(target("web", "web", behavior=FAST_BEHAVIOR))
    metrics = FakeMetrics()
    metrics.set("queue", 60)
    async with running(emu, metrics):
        await eventually(lambda: replicas_of(emu, "web") == 6, what="scale-up with no ScaledObject CRD")
        assert not emu.events("default", involved_name="web", reason="AnotherAutoscaler")


def test_matching_by_group_kind_name_and_namespace() -> None:
    others = [
        trim_hpa(hpa("a", "web", namespace="shop")),
        trim_scaled_object(scaled_object("b", "web", namespace="shop")),
        trim_hpa(hpa("c", "web", namespace="other")),
    ]
    found = [o for o in others if isinstance(o, OtherAutoscaler)]
    assert scaled_by("shop", "apps", "Deployment", "web", found) == "HorizontalPodAutoscaler shop/a"
    assert scaled_by("shop", "apps", "StatefulSet", "web", found) is None
    assert scaled_by("shop", "", "Deployment", "web", found) is None  # another group's Deployment
    assert scaled_by("shop", "apps", "Deployment", "api", found) is None
    assert scaled_by("else", "apps", "Deployment", "web", found) is None
    assert scaled_by("shop", "apps", "Deployment", "web", found[1:2]) == "ScaledObject shop/b"
    keda = trim_hpa(hpa("keda-hpa-b", "web", owner="b", namespace="shop"))
    assert keda is not None and keda.description == "ScaledObject shop/b"


def test_owner_references_of_an_odd_shape_are_skipped_not_fatal() -> None:
    """Anyone may write an HPA's metadata as they like (a client that skips the API server's validation, an
    admission webhook): an odd ``ownerReferences`` is read as none, and the KEDA label still counts."""
    for odd in (5, "ScaledObject", {"kind": "ScaledObject"}, [None, 7, "x"]):
        obj = hpa("keda-hpa-b", "web", owner="b")
        obj["metadata"]["ownerReferences"] = odd
        by_label = trim_hpa(obj)
        assert by_label is not None and by_label.description == "ScaledObject default/b", odd
        del obj["metadata"]["labels"]
        unowned = trim_hpa(obj)
        assert unowned is not None and unowned.description == "HorizontalPodAutoscaler default/keda-hpa-b", odd


async def test_a_scaled_object_crd_installed_later_is_watched_from_then_on(emu: KubeEmulator) -> None:
    """KEDA installed while the service runs: its ScaledObjects count from when discovery serves them (looked
    for again every minute; a second here)."""
    emu.create(deployment("web", 2))
    emu.create(target("web", "web", behavior=FAST_BEHAVIOR))
    metrics = FakeMetrics()
    metrics.set("queue", 30)
    async with emu.api_client() as api:
        manager = make_manager(emu, api, metrics)
        for cache in manager.cluster.scaled_objects.values():
            cache.recheck_seconds = 0.5
        await manager.start_caches()
        await manager.activate()
        try:
            await eventually(lambda: replicas_of(emu, "web") == 3, what="scale-up without KEDA's CRD")
            emu.install_crd(SCALED_OBJECT_CRD)
            emu.create(scaled_object("web", "web"))
            await eventually(lambda: active(emu).get("reason") == "AnotherAutoscaler", what="held once KEDA is served")
            assert "ScaledObject default/web" in active(emu)["message"]
            metrics.set("queue", 60)
            reads = metrics.reads
            await eventually(lambda: metrics.reads >= reads + 3, what="more syncs")
            assert replicas_of(emu, "web") == 3
        finally:
            await manager.stop()


def test_the_index_follows_an_hpa_moved_to_another_workload_and_deleted() -> None:
    index = AutoscalerIndex()
    first, moved = trim_hpa(hpa("h", "web")), trim_hpa(hpa("h", "api"))
    same_name = trim_scaled_object(scaled_object("h", "web"))
    index.on_change(("default", "h"), None, first)
    index.on_change(("default", "h"), None, same_name)  # another kind, the same name: both kept
    assert sorted(o.kind for o in index.scaling("default", "web")) == ["HorizontalPodAutoscaler", "ScaledObject"]
    index.on_change(("default", "h"), first, moved)
    assert [o.kind for o in index.scaling("default", "web")] == ["ScaledObject"]
    assert index.scaling("default", "api") == [moved]
    index.on_change(("default", "h"), moved, None)
    assert index.scaling("default", "api") == [] and index.scaling("other", "web") == []
