"""Issue 37, item 11: /metrics tells of the targets the service decides now, not of every target it ever saw.

A target that goes — deleted, labelled for another shard, or no longer this instance's because it lost the
lead — takes its per-target series with it, and leaves the aggregates (``autoscaler_targets_condition``,
``autoscaler_targets_oldest_sync_age_seconds``…) counting the live targets only. Before, nothing forgot a
target: the aggregates counted deleted ones (AbleToScale True 1,800 with no target left), the oldest-sync age
grew without bound from the deleted targets' last syncs, and once more targets had been seen over time than
``metrics.perTargetSeriesLimit`` the per-target series switched off for the live ones too.
"""

from __future__ import annotations

import asyncio

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.service import ServiceProcess, wait_until
from tests.chaos.world import kubectl, set_load, status_of, target
from tests.service.cluster import deployment

KEY = "autoscaler.dev/shard"
LIMIT = 3  # metrics.perTargetSeriesLimit, lowered: the churn below sees 9 targets over time
PERIOD = 1.0


async def named(service: ServiceProcess, family: str) -> set[str]:
    """The ``name`` label of every sample of a per-target family."""
    return {dict(labels)["name"] for (name, labels), _ in (await service.metrics()).items() if name == family}


async def synced(service: ServiceProcess) -> set[str]:
    return await named(service, "autoscaler_target_last_sync_timestamp_seconds")


def add(cluster: KubeEmulator, name: str) -> None:
    cluster.create(deployment(name, 2))
    cluster.create(target(name, max_replicas=10))


async def test_deleted_and_moved_targets_leave_metrics_and_the_live_ones_keep_theirs(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Failed before the manager forgot targets: the deleted target's and the moved one's series stayed,
    the aggregates counted them, and past three targets seen the per-target series switched off."""
    await set_load(exporter, prometheus, 20)
    for name in ("t1", "t2", "t3"):
        add(cluster, name)
    service = await chaos.service("one", metrics={"perTargetSeriesLimit": LIMIT})
    await wait_until(lambda: _synced_are(service, {"t1", "t2", "t3"}), 40, "a sync of each target")
    assert await service.metric("autoscaler_targets_condition", condition="AbleToScale", status="True") == 3

    cluster.delete("scalingtargets.autoscaler.dev", "t1")
    await kubectl(cluster, chaos.workdir, "label", "st", "t2", f"{KEY}=b", "-n", "default")  # now shard b's
    await wait_until(lambda: _synced_are(service, {"t3"}), 20, "the series of t1 and t2 to go")
    samples = await service.metrics()
    assert not [key for key in samples if ("name", "t1") in key[1] or ("name", "t2") in key[1]]
    assert await service.metric("autoscaler_targets_condition", condition="AbleToScale", status="True") == 1
    assert await service.metric("autoscaler_targets_condition", condition="ScalingActive", status="True") == 1
    # The oldest sync is t3's, a period or so old, however long ago t1 and t2 synced last.
    await asyncio.sleep(4 * PERIOD)
    age = await service.metric("autoscaler_targets_oldest_sync_age_seconds")
    assert age is not None and age < 2.5 * PERIOD, age

    # Churn: nine targets seen in all, never more than three at once: the live ones keep their series.
    live = ["t3"]
    for name in ("t4", "t5", "t6", "t7", "t8", "t9"):
        add(cluster, name)
        live.append(name)
        if len(live) > LIMIT:
            cluster.delete("scalingtargets.autoscaler.dev", live.pop(0))
        await wait_until(lambda: _synced_are(service, set(live)), 20, f"the series of {live}")
    assert await service.metric("autoscaler_per_target_series_exported") == 1
    assert await service.metric("autoscaler_targets_condition", condition="AbleToScale", status="True") == LIMIT
    assert await named(service, "autoscaler_target_final_replicas") == set(live)
    assert status_of(cluster, "t9").get("currentReplicas") is not None
    assert not service.tracebacks()


async def test_a_standby_exports_no_target_series(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Decided in issue 37: an instance that loses the lead forgets every target's series (it decides none;
    standing still, they would age into the oldest-sync alert and count in the aggregates). Failed before:
    the former leader went on exporting them, its oldest-sync age growing."""
    await set_load(exporter, prometheus, 20)
    add(cluster, "web")
    first = await chaos.service("first")
    await wait_until(lambda: _synced_are(first, {"web"}), 40, "the first leader's sync")
    second = await chaos.service("second")
    await wait_until(lambda: second.events("caches synced"), 40, "the standby's caches")
    assert await synced(second) == set()  # it never led: nothing to export

    first.pause()  # its lease runs out; the standby takes over
    await wait_until(lambda: _synced_are(second, {"web"}), 40, "the new leader's sync")
    first.resume()  # it finds it no longer leads, and stops
    await wait_until(lambda: first.events("leader.stopped"), 20, "the former leader to step down")
    await wait_until(lambda: _synced_are(first, set()), 10, "the former leader's target series to go")
    assert await first.metric("autoscaler_leader") == 0
    assert await first.metric("autoscaler_targets_condition", condition="AbleToScale", status="True") == 0
    assert await first.metric("autoscaler_targets_oldest_sync_age_seconds") is None
    assert not first.tracebacks() and not second.tracebacks()


async def _synced_are(service: ServiceProcess, names: set[str]) -> bool:
    return bool(service.events("http.started")) and await synced(service) == names
