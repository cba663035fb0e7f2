"""The manager's targets against the Kubernetes API emulator: an invalid one reported while the others go
on, targets that come and go, two that select the same pods, targets from a file, any kind with a scale
subresource, and only the namespaces it is told to watch.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from autoscaler.kube.labels import parse_label_selector
from autoscaler.service.cluster.caches import retrim_target
from autoscaler.service.cluster.targets import load_targets_file, target_from_object
from kube_emulator import KubeEmulator
from tests.loop_turns import LoopTurns
from tests.service.cluster import (
    FakeMetrics,
    condition,
    deployment,
    eventually,
    queue_metric,
    replicas_of,
    status_of,
    target,
)
from tests.service.manager_setup import make_manager, running


async def test_invalid_target_is_reported_and_others_go_on(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(deployment("api", 2))
    bad = target("broken", "api")
    bad["spec"]["behavior"] = {"scaleUp": {"polices": []}}
    bad["spec"]["maxReplicas"] = 0
    # The CRD's schema refuses maxReplicas 0 and prunes the misspelt field (the emulator enforces it as the API
    # server does), so the object is seeded as it is, like one stored before its CRD's schema was tightened.
    emu.seed(bad)
    emu.create(target("web", "web"))
    metrics = FakeMetrics()
    metrics.set("queue", 40)
    async with emu.api_client() as api:
        manager = make_manager(emu, api, metrics)
        await manager.start_caches()
        await manager.activate()
        try:
            await eventually(lambda: replicas_of(emu, "web") == 4, what="the valid target scales")
            await eventually(
                lambda: condition(status_of(emu, "broken"), "ScalingActive") is not None,
                what="the invalid target's condition",
            )
            active = condition(status_of(emu, "broken"), "ScalingActive")
            assert active is not None and (active["status"], active["reason"]) == ("False", "InvalidSpec")
            assert "spec.maxReplicas: must be greater than 0" in active["message"]
            assert 'spec.behavior.scaleUp.polices: unknown field (did you mean "policies"?)' in active["message"]
            assert emu.events("default", involved_name="broken", reason="InvalidSpec")
            assert replicas_of(emu, "api") == 2
            # fixing it starts its reconciler
            emu.patch("scalingtargets.autoscaler.dev", "broken", {"spec": {"maxReplicas": 10, "behavior": None}})
            await eventually(lambda: replicas_of(emu, "api") == 4, what="the fixed target scales")
        finally:
            await manager.stop()


async def test_an_invalid_target_whose_report_failed_is_reported_by_the_next_term(emu: KubeEmulator) -> None:
    """Its status write refused (500) in one term: the next term reports it, though its spec did not change
    (the last term's memory is no proof that the condition landed)."""
    emu.create(deployment("api", 2))
    bad = target("broken", "api")
    bad["spec"]["maxReplicas"] = 0
    emu.seed(bad)
    refused = emu.faults.error(500, verb="patch", resource="scalingtargets/status", name="broken")
    async with emu.api_client() as api:
        manager = make_manager(emu, api, FakeMetrics())
        await manager.start_caches()
        await manager.activate()
        try:
            await eventually(lambda: refused.fired >= 1, what="the status write refused")
            assert "broken" in {name for _, name in manager.invalid}
            assert condition(status_of(emu, "broken"), "ScalingActive") is None
            emu.faults.remove(refused)
            await manager.deactivate()  # leadership lost, and won again
            await manager.activate()
            await eventually(
                lambda: (condition(status_of(emu, "broken"), "ScalingActive") or {}).get("reason") == "InvalidSpec",
                what="the invalid target's condition, written by the next term",
            )
        finally:
            await manager.stop()


async def test_deactivating_stops_every_reconciler_in_one_go(emu: KubeEmulator) -> None:
    for index in range(40):
        emu.create(deployment(f"web-{index}", 2))
        emu.create(target(f"web-{index}", f"web-{index}"))
    metrics = FakeMetrics()
    metrics.set("queue", 20)  # 2 replicas is right: nothing to write
    async with running(emu, metrics, period=30.0) as manager:
        tasks = [entry.task for entry in manager.running.values()]
        assert len(tasks) == 40
        async with LoopTurns() as turns:
            await manager.deactivate()
        assert not manager.running and all(task.done() for task in tasks)
        assert turns.count <= 3  # one by one, a turn each (40): the ones not reached yet went on syncing


def web_at_its_size(emu: KubeEmulator) -> FakeMetrics:
    """One target, "web", whose metric says its 2 replicas are right: nothing to write."""
    emu.create(deployment("web", 2))
    emu.create(target("web", "web"))
    metrics = FakeMetrics()
    metrics.set("queue", 20)
    return metrics


async def test_a_lost_leadership_keeps_the_last_statuses_for_the_api_and_a_shutdown_does_not(emu: KubeEmulator) -> None:
    metrics = web_at_its_size(emu)
    async with running(emu, metrics, period=1.0) as manager:
        await eventually(lambda: manager.status_of(("default", "web")) is not None, what="the first status")
        await manager.deactivate()  # leadership lost: /api/targets still shows the status last written
        assert manager.status_keys() == [("default", "web")]
        assert manager.status_of(("default", "web"))["desiredReplicas"] == 2  # type: ignore[index]
        await manager.activate()
        assert ("default", "web") in manager.running
        manager.statuses.clear()
        await manager.deactivate(shutting_down=True)
        assert manager.status_keys() == []  # not parsed back at shutdown: no one asks any more


async def test_after_two_handoffs_spec_changes_leave_one_reconciler_per_target(emu: KubeEmulator) -> None:
    metrics = web_at_its_size(emu)

    def reconcilers() -> list[asyncio.Task[Any]]:
        return [t for t in asyncio.all_tasks() if t.get_name() == "reconcile default/web" and not t.done()]

    async with running(emu, metrics, period=30.0) as manager:
        for _ in range(2):  # leadership lost and won back: each term handles the target changes
            await manager.deactivate()
            await manager.activate()
        for replicas in range(11, 17):  # spec changes, each a restart, handled while the last is under way
            emu.patch("scalingtargets.autoscaler.dev", "web", {"spec": {"maxReplicas": replicas}})

        def restarted() -> bool:
            entry = manager.running.get(("default", "web"))
            return entry is not None and entry.target.spec is not None and entry.target.spec.max_replicas == 16

        await eventually(restarted, what="the last spec's reconciler")
        await asyncio.sleep(0.2)
        assert len(reconcilers()) == 1  # two terms' handlers raced: a second reconciler, lost to the manager


async def test_a_restart_under_way_when_the_manager_is_deactivated_starts_no_reconciler(emu: KubeEmulator) -> None:
    metrics = web_at_its_size(emu)
    async with running(emu, metrics, period=30.0) as manager:
        changed = emu.get("scalingtargets.autoscaler.dev", "web")
        assert changed is not None
        changed["spec"]["maxReplicas"] = 30
        changed["metadata"]["generation"] += 1
        # The spec changed: the old reconciler is being stopped (an await) when leadership ends.
        restart = asyncio.create_task(manager._apply_target(target_from_object(changed), at_startup=False))
        await asyncio.sleep(0)
        await manager.deactivate()
        await restart
        assert not manager.running  # a reconciler started now would sync on an instance that does not lead


async def test_targets_come_and_go_within_a_second(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    metrics = FakeMetrics()
    metrics.set("queue", 40)
    async with emu.api_client() as api:
        manager = make_manager(emu, api, metrics, period=30.0)  # ticks far apart: only the start counts
        await manager.start_caches()
        await manager.activate()
        try:
            emu.create(target("web", "web"))
            await eventually(lambda: replicas_of(emu, "web") == 4, timeout=1.5, what="first sync within a second")
            emu.delete("scalingtargets.autoscaler.dev", "web")
            await eventually(lambda: not manager.running, timeout=1.0, what="reconciler stopped")
        finally:
            await manager.stop()


async def test_starting_many_reconcilers_gives_the_loop_turns_and_skips_a_target_deleted_meanwhile(
    emu: KubeEmulator,
) -> None:
    """Taking over 10,000 targets starts 10,000 reconcilers: never in one go (the loop's probes and watches
    wait meanwhile), and a target deleted while the starts go on is not started from the list taken before."""
    emu.create(deployment("web", 2))
    for index in range(250):
        emu.create(target(f"t{index:03d}", "web"))
    metrics = FakeMetrics()
    metrics.set("queue", 40)
    async with emu.api_client() as api:
        manager = make_manager(emu, api, metrics, period=30.0)
        await manager.start_caches()
        turns = 0
        activated = asyncio.Event()
        deleted: list[tuple[str, str]] = []

        async def count_turns() -> None:
            nonlocal turns
            while not activated.is_set():
                if manager._active:  # the starts have begun
                    turns += 1
                    if not deleted:  # one not started yet leaves the cache between two turns (a watch event)
                        key = next(key for key in manager._targets if key not in manager.running)
                        manager._target_event(key, manager._targets[key], None)
                        deleted.append(key)
                await asyncio.sleep(0)

        counter = asyncio.create_task(count_turns())
        try:
            await manager.activate()
            activated.set()
            await counter
            assert turns >= 2  # 250 starts, 100 per turn
            assert len(manager.running) == 249 and deleted[0] not in manager.running
        finally:
            await manager.stop()


async def test_ambiguous_selector(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(target("one", "web"))
    emu.create(target("two", "web"))
    metrics = FakeMetrics()
    metrics.set("queue", 20)
    async with running(emu, metrics):
        await eventually(
            lambda: (
                (condition(status_of(emu, "two"), "ScalingActive") or {}).get("reason") == "AmbiguousSelector"
                or (condition(status_of(emu, "one"), "ScalingActive") or {}).get("reason") == "AmbiguousSelector"
            ),
            what="ambiguity",
        )


async def test_ambiguity_follows_pod_labels(emu: KubeEmulator) -> None:
    """The pod → selecting targets map is cached per namespace; a label change must still be seen."""
    emu.create(deployment("web", 2))
    backend = deployment("all", 1)
    backend["spec"]["selector"] = {"matchLabels": {"tier": "backend"}}
    backend["spec"]["template"]["metadata"]["labels"] = {"tier": "backend"}
    emu.create(backend)
    emu.create(target("web", "web"))
    emu.create(target("all", "all"))
    metrics = FakeMetrics()
    metrics.set("queue", 10)
    async with running(emu, metrics) as manager:
        await eventually(
            lambda: (
                len(manager.pods.select("default", parse_label_selector("app=web"))) == 2
                and all(manager.running[("default", n)].reconciler.syncs >= 1 for n in ("web", "all"))
            ),
            what="both targets synced",
        )
        web = manager.running[("default", "web")].target

        def others() -> list[str]:
            return manager.view.others_selecting(web, manager.pods.select("default", parse_label_selector("app=web")))

        assert others() == []
        assert others() == []  # answered from the cache this time
        name = manager.pods.select("default", parse_label_selector("app=web"))[0].name
        emu.patch("pods", name, {"metadata": {"labels": {"tier": "backend"}}})
        await eventually(lambda: others() == ["default/all"], what="the relabelled pod seen by both selectors")


async def test_standalone_targets_from_a_file(emu: KubeEmulator, tmp_path: Any) -> None:
    import yaml

    emu.create(deployment("web", 2))
    path = tmp_path / "targets.yaml"
    path.write_text(yaml.safe_dump_all([target("web", "web")]))
    targets = load_targets_file(str(path))
    metrics = FakeMetrics()
    metrics.set("queue", 40)
    async with running(emu, metrics, static_targets=targets) as manager:
        await eventually(lambda: replicas_of(emu, "web") == 4, what="standalone scale")
        await eventually(lambda: manager.status_of(("default", "web")) is not None, what="in-memory status")
        assert manager.status_of(("default", "web"))["currentReplicas"] in (2, 4)  # type: ignore[index]
        # The Event follows the scale write (and the status that records it): waited for, not raced.
        await eventually(
            lambda: bool(
                emu.events("default", involved_name="web", involved_kind="Deployment", reason="SuccessfulRescale")
            ),
            what="the SuccessfulRescale Event on the Deployment",
        )


def test_target_objects_parse_with_errors_kept() -> None:
    parsed = target_from_object(target("web", "web", metrics=[queue_metric()]))
    assert parsed.valid and parsed.spec is not None
    broken = target("x", "web")
    broken["spec"]["maxReplicas"] = "ten"
    bad = target_from_object(broken)
    assert not bad.valid and [str(e) for e in bad.errors] == ["spec.maxReplicas: must be an integer, not string"]


def statefulset(name: str, replicas: int) -> dict[str, Any]:
    obj = deployment(name, replicas)
    obj["kind"] = "StatefulSet"
    obj["spec"]["serviceName"] = name
    return obj


async def test_any_kind_with_a_scale_subresource_through_discovery(emu: KubeEmulator) -> None:
    emu.create(statefulset("db", 2))
    spec = target("db", "db")
    spec["spec"]["scaleTargetRef"] = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}
    emu.create(spec)
    metrics = FakeMetrics()
    metrics.set("queue", 40)
    async with running(emu, metrics):

        def replicas() -> int:
            obj = emu.get("statefulsets", "db")
            assert obj is not None
            return int(obj["spec"]["replicas"])

        await eventually(lambda: replicas() == 4, what="the StatefulSet scales")
        assert emu.requests.count("get", "statefulsets/scale") >= 1
        assert emu.requests.count("patch", "statefulsets/scale") == 1


async def test_only_the_listed_namespaces_are_watched(emu: KubeEmulator) -> None:
    for ns in ("team-a", "team-b"):
        emu.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        emu.create(deployment("web", 2, namespace=ns))
        emu.create(target("web", "web", namespace=ns))
    metrics = FakeMetrics()
    metrics.set("queue", 40)
    async with running(emu, metrics, namespaces=["team-a"]) as manager:
        await eventually(lambda: replicas_of(emu, "web", "team-a") == 4, what="team-a scales")
        assert replicas_of(emu, "web", "team-b") == 2
        assert set(manager.running) == {("team-a", "web")}


def test_a_status_only_version_keeps_the_parsed_spec() -> None:
    """A status write comes back through the watch: at the same generation the spec is not parsed again,
    at a new one it is; an invalid known target, or a status past the limits, is read whole."""
    obj = target("web", "web", metrics=[queue_metric()])
    obj["metadata"].update(uid="u-1", generation=3)
    known = target_from_object(obj)
    written = copy.deepcopy(obj)
    written["status"] = {"currentReplicas": 4}
    again = retrim_target(known, written)
    assert again is not None and again.spec is known.spec and again.status == {"currentReplicas": 4}
    edited = copy.deepcopy(written)
    edited["spec"]["maxReplicas"] = 7
    edited["metadata"]["generation"] = 4
    changed = retrim_target(known, edited)
    assert changed is not None and changed.spec is not None and changed.spec.max_replicas == 7
    recreated = copy.deepcopy(edited)
    recreated["metadata"].update(uid="u-2", generation=3)  # deleted and created again: generation 3 anew
    assert retrim_target(changed, recreated).spec.max_replicas == 7  # type: ignore[union-attr]
    assert retrim_target(known, recreated).spec is not known.spec  # type: ignore[union-attr]
    broken = copy.deepcopy(obj)
    broken["spec"]["maxReplicas"] = "ten"
    invalid = target_from_object(broken)
    fixed_in_place = copy.deepcopy(obj)  # same generation (a test's stand-in for a missed bump)
    assert retrim_target(invalid, fixed_in_place).valid  # type: ignore[union-attr]
    deep: dict[str, object] = {}
    level = deep
    for _ in range(200):
        level["x"] = {}
        level = level["x"]  # type: ignore[assignment]
    too_deep = copy.deepcopy(obj)
    too_deep["status"] = deep
    unreadable = retrim_target(known, too_deep)
    assert unreadable is not None and not unreadable.valid and unreadable.errors[0].path.startswith("status")


def test_a_status_keeps_what_the_quick_encoder_refuses() -> None:
    """A status is kept as compact text by orjson, and by the standard library where orjson refuses
    (an integer past 64 bits, a key that is not a string): nothing in it is lost either way."""
    obj = target("web", "web", metrics=[queue_metric()])
    obj["status"] = {"currentReplicas": 4, "note": {"big": 2**70, "text": "ü"}}
    assert target_from_object(obj).status == obj["status"]
    obj["status"]["note"] = {"text": "ü"}
    assert target_from_object(obj).status == obj["status"]


async def test_a_read_is_told_how_many_pods_the_namespace_has(emu: KubeEmulator) -> None:
    """The metrics read gets the target's pods and every pod the service knows in its namespace (where a
    batch reads a small part of a namespace, its query names its pods: docs/prometheus.md)."""
    emu.create(deployment("web", 2))
    emu.create(deployment("db", 5))
    emu.create(deployment("elsewhere", 3, namespace="other"))
    emu.create(target("web", "web"))
    metrics = FakeMetrics()
    metrics.set("queue", 20)
    async with running(emu, metrics):
        await eventually(lambda: any(len(q.pod_names) == 2 for q in metrics.queries), what="a read of both pods")
        await eventually(lambda: metrics.queries[-1].namespace_pods == 7, what="the namespace's seven pods")
