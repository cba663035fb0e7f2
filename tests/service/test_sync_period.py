"""A target's own sync period (``spec.syncPeriodSeconds``, KEDA's pollingInterval) in the running service: it
syncs on its own grid while the namespace's other targets keep the service's period."""

from __future__ import annotations

from autoscaler.kube.api import KubeApi
from autoscaler.service.telemetry.metrics import ServiceMetrics
from kube_emulator import KubeEmulator
from tests.service.cluster import FakeMetrics, deployment, eventually, target
from tests.service.manager_setup import build_manager, manager_options


async def test_a_target_with_its_own_period_syncs_that_often_and_the_others_do_not(emu: KubeEmulator) -> None:
    emu.create(deployment("web", 2))
    emu.create(deployment("api", 2))
    fast = target("fast", "web")
    fast["spec"]["syncPeriodSeconds"] = 1
    emu.create(fast)
    emu.create(target("slow", "api"))  # the service's period: 30 s
    metrics = FakeMetrics()
    metrics.set("queue", 20)
    async with emu.api_client() as api:
        exported = ServiceMetrics(process_metrics=False)
        manager = build_manager(KubeApi(api), metrics.read_many, **manager_options(period=30.0, metrics=exported))
        await manager.start_caches()
        await manager.activate()
        try:
            running = {key[1]: entry.reconciler for key, entry in manager.running.items()}
            assert running["fast"].period == 1.0 and running["slow"].period == 30.0
            await eventually(lambda: running["fast"].syncs >= 3, timeout=20.0, what="three syncs of the 1 s target")
            assert running["slow"].syncs <= 1  # at most its first tick
            # /metrics says how often each syncs (AutoscalerTargetNotSynced counts past it)
            text = exported.exposition()[0].decode()
            assert 'autoscaler_target_sync_period_seconds{name="fast",namespace="default"} 1.0' in text
        finally:
            await manager.stop()
