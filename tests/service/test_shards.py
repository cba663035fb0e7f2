"""Label sharding in the manager, against the Kubernetes API emulator through the real client: each instance
holds its own shard's targets only, a relabelled target moves, and a sync in progress when its target
leaves writes nothing (docs/sharding.md)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs

import pytest

from autoscaler.core.observation import MetricReading
from autoscaler.core.settings import ControllerSettings
from autoscaler.kube.api import KubeApi
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.service.cluster.sharding import ShardingSettings
from autoscaler.service.sync.reconciler import TargetReconciler
from kube_emulator import KubeEmulator
from tests.service.cluster import (
    FakeMetrics,
    deployment,
    eventually,
    replicas_of,
    status_of,
    target,
)
from tests.service.manager_setup import build_manager, running_manager

PERIOD = 0.3
KEY = "autoscaler.dev/shard"
TARGETS = "scalingtargets.autoscaler.dev"


def options(shard: str | None) -> dict[str, Any]:
    return {
        "settings": ControllerSettings(downscale_stabilization_window=1.0),
        "period": PERIOD,
        "jitter": 0.0,
        "batch_window": 0.05,
        "sharding": ShardingSettings(shard),
    }


def labelled(name: str, shard: str | None) -> dict[str, Any]:
    obj = target(name, name)
    if shard is not None:
        obj["metadata"]["labels"] = {KEY: shard}
    return obj


def relabel(emu: KubeEmulator, name: str, shard: str | None) -> None:
    """What ``kubectl label st <name> autoscaler.dev/shard=<shard> --overwrite`` sends (None: ``shard-``)."""
    emu.patch(TARGETS, name, {"metadata": {"labels": {KEY: shard}}}, namespace="default")


async def test_each_instance_holds_its_own_shards_targets_only(emu: KubeEmulator) -> None:
    for name, shard in (("a1", "a"), ("a2", "a"), ("b1", "b"), ("u1", None)):
        emu.create(deployment(name, 2))
        emu.create(labelled(name, shard))
    metrics = FakeMetrics()
    metrics.set("queue", 30)
    async with contextlib.AsyncExitStack() as stack:
        managers = {
            shard: await stack.enter_async_context(running_manager(emu, metrics.read_many, **options(shard)))
            for shard in ("a", "b", None)
        }
        assert {shard: sorted(name for _, name in m.running) for shard, m in managers.items()} == {
            "a": ["a1", "a2"],
            "b": ["b1"],
            None: ["u1"],
        }
        assert {
            shard: sorted(name for _, name in m.cluster.targets[None].records) for shard, m in managers.items()
        } == {
            "a": ["a1", "a2"],
            "b": ["b1"],
            None: ["u1"],
        }, "the API server filtered: no instance holds another shard's targets"
        await eventually(
            lambda: all(replicas_of(emu, name) == 3 for name in ("a1", "a2", "b1", "u1")), what="every target scaled"
        )

        # Every LIST and WATCH of targets carried its instance's selector (the takeover LIST too).
        def selectors() -> set[tuple[str, str]]:
            return {
                (r.verb, str(parse_qs(r.query).get("labelSelector")))
                for r in emu.requests.records
                if r.resource == "scalingtargets" and r.verb in ("list", "watch")
            }

        expected = {
            (verb, str([selector])) for verb in ("list", "watch") for selector in (f"{KEY}=a", f"{KEY}=b", f"!{KEY}")
        }
        await eventually(lambda: selectors() == expected, what=f"each instance's selector: {selectors()}")
        assert {name: status_of(emu, name).get("shard") for name in ("a1", "a2", "b1", "u1")} == {
            "a1": "a",
            "a2": "a",
            "b1": "b",
            "u1": None,
        }, "status.shard names the shard that wrote it"
        # A label added, changed, removed: the target moves, and its status says where it is now.
        for shard in ("b", "a", None):
            relabel(emu, "u1", shard)

            def served_by(shard: str | None = shard) -> bool:
                holders = [key for m in managers.values() for key in m.running if key[1] == "u1"]
                return (
                    holders == [("default", "u1")]
                    and ("default", "u1") in managers[shard].running
                    and status_of(emu, "u1").get("shard") == shard
                )

            await eventually(served_by, what=f"u1 served by shard {shard} alone")


class HeldMetrics(FakeMetrics):
    """Metrics whose read waits until the test lets it go: a sync caught between its reads and its writes."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = asyncio.Event()
        self.release = asyncio.Event()

    async def read_many(
        self, queries: Sequence[TargetQuery], at: float | None, *, on_ready: object = None
    ) -> list[list[MetricReading]]:
        self.waiting.set()
        await self.release.wait()
        return await super().read_many(queries, at, on_ready=on_ready)


@pytest.mark.parametrize("change", ["stays", "moved", "watch broken"])
async def test_a_sync_in_progress_writes_nothing_once_its_target_left(emu: KubeEmulator, change: str) -> None:
    """Shard a's sync of web has read its metrics and is about to scale when web is relabelled to shard b,
    or when a's watch of targets breaks (which could hide such a change): it writes nothing (no scale, no
    status, no Event), because every write checks first that the target is still in the instance's target
    cache and that the cache follows the API server. The reconciler is driven directly, so that nothing but
    that check (not the manager stopping the reconciler) can hold the writes; the control case shows the
    same sync writes when nothing changes."""
    emu.create(deployment("web", 2))
    emu.create(labelled("web", "a"))
    if change == "watch broken":  # the first watch of targets is cut 1.5 s in (after the sync has begun)
        emu.faults.drop_watches(after_seconds=1.5, abrupt=True, resource="scalingtargets", times=1)
    metrics = HeldMetrics()
    metrics.set("queue", 40)  # 4 replicas
    async with emu.api_client() as client:
        manager = build_manager(KubeApi(client), metrics.read_many, **options("a"))
        await manager.start_caches()
        try:
            await manager.wait_synced()
            cache = manager.cluster.targets[None]
            web = cache.get("default", "web")
            assert web is not None
            reconciler = TargetReconciler(web, manager.view, manager.writer, manager.context)
            sync = asyncio.create_task(reconciler.sync_once())
            await asyncio.wait_for(metrics.waiting.wait(), 5)
            if change == "moved":
                relabel(emu, "web", "b")
                await eventually(lambda: cache.get("default", "web") is None, what="shard a's watch shows the move")
            elif change == "watch broken":
                emu.faults.error(500, resource="scalingtargets")  # and the relists fail
                await eventually(lambda: not cache.following, what="shard a's watch of targets breaks")
            writes_before = len([r for r in emu.requests.records if r.verb in ("patch", "create", "update")])
            metrics.release.set()
            decision = await asyncio.wait_for(sync, 5)
            writes = [r for r in emu.requests.records if r.verb in ("patch", "create", "update")][writes_before:]
            if change != "stays":
                assert decision is None and writes == [], [f"{r.verb} {r.resource}" for r in writes]
                assert replicas_of(emu, "web") == 2 and not status_of(emu, "web")
            else:
                assert decision is not None and decision.applied
                assert {r.resource for r in writes} >= {"deployments/scale", "scalingtargets/status", "events"}
                assert replicas_of(emu, "web") == 4
        finally:
            await manager.stop()


async def test_a_target_that_comes_back_starts_from_the_servers_status(emu: KubeEmulator) -> None:
    """web leaves shard a and comes back before a's manager has handled the first change: its reconciler
    is replaced all the same (the history another shard may have written meanwhile is the server's), and
    a target that arrives with a status waits a period before its first sync."""
    emu.create(deployment("web", 2))
    emu.create(labelled("web", "a"))
    metrics = FakeMetrics()
    metrics.set("queue", 30)
    async with running_manager(emu, metrics.read_many, **options("a")) as manager:
        await eventually(lambda: status_of(emu, "web").get("shard") == "a", what="a's first status")
        first = manager.running[("default", "web")].reconciler
        relabel(emu, "web", "b")
        relabel(emu, "web", "a")
        await eventually(
            lambda: (
                ("default", "web") in manager.running and manager.running[("default", "web")].reconciler is not first
            ),
            what="a new reconciler",
        )
        second = manager.running[("default", "web")].reconciler
        started = asyncio.get_running_loop().time()
        await eventually(lambda: second.syncs >= 1, what="its first sync")
        assert asyncio.get_running_loop().time() - started >= PERIOD * 0.8, "the first sync waited a period"
