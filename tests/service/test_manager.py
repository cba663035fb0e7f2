"""The manager and its reconcilers against the Kubernetes API emulator, driven through the real
kubernetes-asyncio client, with a metrics source the test controls: what a sync does (scale, status,
conditions, Events, logs), what it writes and what it does not, and what survives a restart. Which
targets run, and what they point at: test_manager_targets.py.
"""

from __future__ import annotations

import io
import json
import logging
import time

import pytest
import structlog

from autoscaler.service.settings import LoggingSettings
from autoscaler.service.telemetry.logs import configure_logging
from kube_emulator import KubeEmulator
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
from tests.service.manager_setup import FAST_BEHAVIOR, make_manager, running


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


async def test_the_manager_counts_the_reconcilers_that_have_not_decided_yet(emu: KubeEmulator) -> None:
    """What the collector's start-up freeze waits for (loop/collector.py): a target whose scale cannot
    be read never decides, and stays counted."""
    emu.create(deployment("web", 1))
    emu.create(target("web", "web"))
    emu.create(target("ghost", "no-such-deployment"))
    metrics = FakeMetrics()
    metrics.set("queue", 10)
    async with running(emu, metrics) as manager:
        web = manager.running[("default", "web")].reconciler
        await eventually(lambda: web.syncs >= 2, what="two syncs of web")
        assert manager.unsynced() == 1


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


async def test_a_takeover_logs_one_line_for_its_reconcilers_and_a_later_target_its_own(emu: KubeEmulator) -> None:
    for name in ("a", "b", "c"):
        emu.create(deployment(name, 1))
        emu.create(target(name, name))
    # Invalid (a target value of 0), which the CRD admits and the service refuses: counted apart.
    emu.create(target("broken", "a", metrics=[queue_metric(per_pod="0")]))
    with structlog.testing.capture_logs() as logs:
        async with running(emu, FakeMetrics()) as manager:
            emu.create(deployment("d", 1))
            emu.create(target("d", "d"))
            await eventually(lambda: ("default", "d") in manager.running, what="the later target's reconciler")
    started = [(line["log_level"], line.get("name")) for line in logs if line["event"] == "reconciler started"]
    assert sorted(started) == [("debug", "a"), ("debug", "b"), ("debug", "c"), ("info", "d")]
    summary = [line for line in logs if line["event"] == "reconcilers started"]
    assert [(s["log_level"], s["targets"], s["invalid"]) for s in summary] == [("info", 3, 1)]


@pytest.mark.usefixtures("restore_logging")
async def test_every_line_of_a_running_reconciler_names_its_target_and_only_its_task_carries_it(
    emu: KubeEmulator,
) -> None:
    stream = io.StringIO()
    configure_logging(LoggingSettings(format="json", level="debug"), stream=stream)
    for name in ("a", "b"):
        emu.create(deployment(name, 1))
        emu.create(target(name, name))
    metrics = FakeMetrics()
    metrics.set("queue", 10)
    async with running(emu, metrics) as manager:
        reconcilers = [manager.running[("default", n)].reconciler for n in ("a", "b")]
        await eventually(lambda: all(r.syncs >= 3 for r in reconcilers), what="three syncs each")
    structlog.get_logger("autoscaler.test").info("after")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    decisions = [line for line in lines if line["event"] == "decision"]
    assert {line["name"] for line in decisions} == {"a", "b"} and len(decisions) >= 6
    assert all(line["namespace"] == "default" for line in decisions)
    assert "name" not in lines[-1] and lines[-1]["event"] == "after"


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


async def test_a_leader_whose_target_caches_listed_after_it_began_to_lead_reads_them_not_again(
    emu: KubeEmulator,
) -> None:
    """The takeover read (D3) is for caches that may hold an older picture than the last leader left; caches
    that listed after this instance began to lead already hold it, and nobody else writes since."""
    emu.create(deployment("web", 2))
    emu.create(target("web", "web"))
    async with emu.api_client() as api:
        for began, reads_again in (("before the caches", False), ("unknown", True), ("after they synced", True)):
            leading_since = time.monotonic() if began == "before the caches" else None
            manager = make_manager(emu, api, FakeMetrics())
            await manager.start_caches()
            await manager.wait_synced()
            if began == "after they synced":
                leading_since = time.monotonic()
            lists = emu.requests.count("list", "scalingtargets")
            try:
                await manager.activate(leading_since)
                assert (emu.requests.count("list", "scalingtargets") > lists) == reads_again, began
                assert ("default", "web") in manager.running
            finally:
                await manager.stop()
