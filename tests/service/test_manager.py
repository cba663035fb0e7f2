"""The manager and its reconcilers against the Kubernetes API emulator, driven through the real
kubernetes-asyncio client, with a metrics source the test controls."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import structlog

from autoscaler.core.settings import ControllerSettings
from autoscaler.kube.api import KubeApi
from autoscaler.kube.labels import parse_label_selector
from autoscaler.service.manager import Manager
from autoscaler.service.targets import load_targets_file, target_from_object
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.service.cluster import (
    CRD,
    FakeMetrics,
    condition,
    deployment,
    eventually,
    queue_metric,
    replicas_of,
    running_manager,
    status_of,
    target,
)

PERIOD = 0.3


@pytest.fixture
async def emu() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=0.5, controllers=[WorkloadController(PodLifecycle())]) as emulator:
        emulator.install_crd(CRD)
        yield emulator


def manager_options(**kwargs: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "settings": ControllerSettings(downscale_stabilization_window=1.0),
        "period": PERIOD,
        "jitter": 0.0,
        "batch_window": 0.05,
    }
    return {**options, **kwargs}


def make_manager(emu: KubeEmulator, api: Any, metrics: FakeMetrics, **kwargs: Any) -> Manager:
    return Manager(KubeApi(api), metrics.read_many, **manager_options(**kwargs))


def running(emu: KubeEmulator, metrics: FakeMetrics, **kwargs: Any) -> contextlib.AbstractAsyncContextManager[Manager]:
    """A started manager with this module's settings (see :func:`running_manager`)."""
    return running_manager(emu, metrics.read_many, **manager_options(**kwargs))


FAST_BEHAVIOR = {"scaleDown": {"stabilizationWindowSeconds": 0}}


async def test_scales_a_deployment_and_reports(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(target("web", "web", behavior=FAST_BEHAVIOR))
    metrics = FakeMetrics()
    metrics.set("queue", 60)  # 60 / 10 per pod -> 6 replicas
    async with running(emu, metrics):
        # default scale-up policy: max(+4 pods, +100 %) per 15 s -> 2 -> 6
        await eventually(lambda: replicas_of(emu, "web") == 6, what="scale-up to 6")
        await eventually(lambda: status_of(emu, "web").get("currentReplicas") == 6, what="status")
        status = status_of(emu, "web")
        assert condition(status, "ScalingActive")["reason"] == "ValidMetricFound"  # type: ignore[index]
        assert status["history"]["scaleUpEvents"][0]["change"] == 4
        assert status["lastDecision"]["explanation"]
        events = emu.events("default", involved_name="web", reason="SuccessfulRescale")
        assert events and events[0]["message"].startswith("New size: 6; reason: external metric queue")
        # the load falls: down to 1 (min)
        metrics.set("queue", 5)
        await eventually(lambda: replicas_of(emu, "web") == 1, what="scale-down")


async def test_a_failed_metric_never_scales_down(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 4))
    emu.create(target("web", "web", behavior=FAST_BEHAVIOR))
    metrics = FakeMetrics()
    metrics.set("queue", None)
    async with running(emu, metrics):
        await eventually(
            lambda: (
                (condition(status_of(emu, "web"), "ScalingActive") or {}).get("reason") == "FailedGetExternalMetric"
            ),
            what="ScalingActive False",
        )
        reads = metrics.reads
        await eventually(lambda: metrics.reads >= reads + 3, what="more syncs")
        assert replicas_of(emu, "web") == 4
        status = status_of(emu, "web")
        assert condition(status, "ScalingActive")["status"] == "False"  # type: ignore[index]
        assert emu.events("default", involved_name="web", reason="FailedGetExternalMetric")
        # Prometheus comes back: the target recovers by itself
        metrics.set("queue", 40)
        await eventually(
            lambda: (condition(status_of(emu, "web"), "ScalingActive") or {}).get("status") == "True", what="recovery"
        )


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


async def test_steady_state_makes_no_list_calls_and_no_writes(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 4))
    emu.create(target("web", "web"))
    metrics = FakeMetrics()
    metrics.set("queue", 40)  # exactly 4 × 10: within tolerance
    async with running(emu, metrics):
        await eventually(lambda: status_of(emu, "web").get("currentReplicas") == 4, what="first status")
        counts = dict(emu.requests.counts())
        reads = metrics.reads
        await eventually(lambda: metrics.reads >= reads + 5, what="five more syncs")
        after = dict(emu.requests.counts())
        new = {k: after.get(k, 0) - counts.get(k, 0) for k in after if after.get(k, 0) != counts.get(k, 0)}
        assert not any(str(k).startswith(("list", "patch", "create", "update", "post", "put")) for k in new), new


async def test_the_targets_of_a_namespace_sync_together_and_share_reads(emu: KubeEmulator) -> None:
    for name in ("a", "b", "c"):
        emu.create(deployment(name, 1))
        emu.create(target(name, name))
    metrics = FakeMetrics()
    metrics.set("queue", 10)
    async with running(emu, metrics, jitter=0.1) as manager:
        reconcilers = [manager.running[("default", n)].reconciler for n in ("a", "b", "c")]
        await eventually(lambda: all(r.syncs >= 6 for r in reconcilers), what="six syncs each")
        syncs = sum(r.syncs for r in reconcilers)
        assert metrics.reads <= syncs / 3 + 2, (metrics.reads, syncs)  # one read per tick, not per target


@pytest.mark.parametrize("level", [logging.DEBUG, logging.INFO])
async def test_a_steady_decision_is_logged_at_debug_a_change_at_info(
    emu: KubeEmulator, level: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(level, logger="autoscaler.reconciler")
    emu.create(deployment("web", 4))
    emu.create(target("web", "web", behavior=FAST_BEHAVIOR))
    metrics = FakeMetrics()
    metrics.set("queue", 40)  # exactly 4 × 10: within tolerance
    with structlog.testing.capture_logs() as logs:
        async with running(emu, metrics) as manager:
            reconciler = manager.running[("default", "web")].reconciler
            await eventually(lambda: reconciler.syncs >= 3, what="three syncs")
            metrics.set("queue", 80)
            await eventually(
                lambda: any(line["event"] == "decision" and line["scaled"] for line in logs),
                what="the scale-up decision",
            )
    decisions = [line for line in logs if line["event"] == "decision"]
    assert decisions[0]["log_level"] == "info"  # the first status
    if level == logging.DEBUG:
        assert [line["log_level"] for line in decisions[1:3]] == ["debug", "debug"]  # steady
    else:  # at info, a steady decision is not even handed to structlog
        assert [line["log_level"] for line in decisions] == ["info"] * len(decisions)
        assert decisions[1]["scaled"]
    assert all(line["log_level"] == "info" for line in decisions if line["scaled"])


async def test_conflicting_writes_are_retried_on_fresh_state(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(target("web", "web"))
    metrics = FakeMetrics()
    metrics.set("queue", 40)
    emu.faults.conflicts(2, verb="patch", resource="deployments/scale")
    async with running(emu, metrics):
        await eventually(lambda: replicas_of(emu, "web") == 4, what="scale despite conflicts")
        await eventually(
            lambda: (condition(status_of(emu, "web"), "AbleToScale") or {}).get("reason") == "SucceededRescale",
            what="SucceededRescale",
        )
        assert emu.requests.count("patch", "deployments/scale") == 3  # two conflicts, then success


async def test_write_failures_become_conditions_and_events(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(target("web", "web"))
    metrics = FakeMetrics()
    metrics.set("queue", 40)
    emu.faults.error(500, verb="patch", resource="deployments/scale", times=1000)
    async with running(emu, metrics) as manager:
        await eventually(
            lambda: (condition(status_of(emu, "web"), "AbleToScale") or {}).get("reason") == "FailedUpdateScale",
            what="FailedUpdateScale",
        )
        assert emu.events("default", involved_name="web", reason="FailedRescale")
        assert replicas_of(emu, "web") == 2
        assert manager.running  # the reconciler goes on


async def test_dry_run_writes_nothing_to_the_workload(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(target("web", "web"))
    metrics = FakeMetrics()
    metrics.set("queue", 40)
    async with running(emu, metrics, dry_run=True):
        await eventually(lambda: status_of(emu, "web").get("desiredReplicas") == 4, what="dry-run status")
        assert status_of(emu, "web")["dryRun"] is True
        assert replicas_of(emu, "web") == 2
        assert emu.requests.count("patch", "deployments/scale") == 0


async def test_restart_keeps_the_stabilization_window(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(
        target(
            "web",
            "web",
            behavior={
                "scaleUp": {"policies": [{"type": "Percent", "value": 1000, "periodSeconds": 1}]},
                "scaleDown": {"stabilizationWindowSeconds": 4},
            },
        )
    )
    metrics = FakeMetrics()
    metrics.set("queue", 80)
    async with emu.api_client() as api:
        first = make_manager(emu, api, metrics)
        await first.start_caches()
        await first.activate()
        await eventually(lambda: replicas_of(emu, "web") == 8, what="scale-up")
        metrics.set("queue", 10)
        await eventually(lambda: first.running[("default", "web")].reconciler.syncs >= 3, what="a few more syncs")
        await first.stop()
        # a new process: the 4 s window still holds the recommendation of 8
        second = make_manager(emu, api, metrics)
        await second.start_caches()
        await second.activate()
        try:
            await eventually(lambda: second.running[("default", "web")].reconciler.syncs >= 2, what="syncs")
            assert replicas_of(emu, "web") == 8
            await eventually(lambda: replicas_of(emu, "web") == 1, timeout=8, what="scale-down after the window")
        finally:
            await second.stop()


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
        await eventually(lambda: ("default", "web") in manager.target_documents(), what="in-memory status")
        assert manager.target_documents()[("default", "web")]["currentReplicas"] in (2, 4)
        assert emu.events("default", involved_name="web", involved_kind="Deployment", reason="SuccessfulRescale")


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


async def test_a_throttled_api_slows_everyone_and_the_write_still_lands(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(target("web", "web"))
    metrics = FakeMetrics()
    metrics.set("queue", 40)
    emu.faults.throttle(retry_after=1, verb="patch", resource="deployments/scale", times=1)
    async with emu.api_client() as api:
        manager = make_manager(emu, api, metrics)
        await manager.start_caches()
        await manager.activate()
        try:
            await eventually(lambda: replicas_of(emu, "web") == 4, what="the write after Retry-After")
            assert manager.api.throttled == 1
            assert (condition(status_of(emu, "web"), "AbleToScale") or {}).get("reason") != "FailedUpdateScale"
        finally:
            await manager.stop()
