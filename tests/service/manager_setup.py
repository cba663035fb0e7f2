"""The manager as the tests build it: through the service's wiring (autoscaler/service/wiring.py), from the
options the tests speak in (a period, a jitter, a batch window, the controller settings...), against the
API emulator; and as the test_manager*.py modules run it: a 0.3 s period, no jitter, a 1 s downscale
stabilization window, and a metrics source the test controls.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from autoscaler.core.settings import ControllerSettings
from autoscaler.kube.api import KubeApi
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.service.cluster.sharding import ShardingSettings
from autoscaler.service.cluster.targets import Target
from autoscaler.service.manager import Manager
from autoscaler.service.settings import KubernetesSettings, ServiceSettings, ServingSettings, SyncSettings
from autoscaler.service.sync.batcher import ReadMany
from autoscaler.service.wiring import SyncHooks, build_sync_parts
from kube_emulator import KubeEmulator
from tests.service.cluster import FakeMetrics

PERIOD = 0.3
UNREAD_PROMETHEUS = "http://prometheus.invalid:9090"  # the tests' metrics come from read_many, never from here


def build_manager(
    api: KubeApi,
    read_many: ReadMany,
    *,
    settings: ControllerSettings | None = None,
    period: float = 15.0,
    jitter: float = 0.1,
    concurrency: int = 50,
    batch_window: float = 1.0,
    dry_run: bool = False,
    namespaces: Iterable[str] = (),
    sharding: ShardingSettings | None = None,
    static_targets: list[Target] | None = None,
    on_targets: Callable[[int, int], None] | None = None,
    **hooks: Any,
) -> Manager:
    """A manager wired as the service wires its own; ``hooks``: :class:`SyncHooks`' fields (metrics, may_write,
    may_finish, identity, recorder, clock, backend_health)."""
    service_settings = ServiceSettings(
        prometheus=PrometheusSettings(url=UNREAD_PROMETHEUS),
        kubernetes=KubernetesSettings(namespaces=tuple(namespaces)),
        sync=SyncSettings(
            period_seconds=period, jitter=jitter, concurrency=concurrency, batch_window_seconds=batch_window
        ),
        controller=settings or ControllerSettings(),
        serving=ServingSettings(dry_run=dry_run, sharding=sharding or ShardingSettings()),
    )
    parts = build_sync_parts(service_settings, api, read_many, SyncHooks(**hooks), static=static_targets is not None)
    return Manager(parts, static_targets=static_targets, on_targets=on_targets)


@contextlib.asynccontextmanager
async def running_manager(emu: KubeEmulator, read_many: ReadMany, **options: Any) -> AsyncIterator[Manager]:
    """A manager against ``emu`` with its caches synced and its reconcilers started; stopped on the way
    out. ``options`` go to :func:`build_manager`."""
    async with emu.api_client() as api:
        manager = build_manager(KubeApi(api), read_many, **options)
        await manager.start_caches()
        await manager.activate()
        try:
            yield manager
        finally:
            await manager.stop()


def manager_options(**kwargs: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "settings": ControllerSettings(downscale_stabilization_window=1.0),
        "period": PERIOD,
        "jitter": 0.0,
        "batch_window": 0.05,
    }
    return {**options, **kwargs}


def make_manager(emu: KubeEmulator, api: Any, metrics: FakeMetrics, **kwargs: Any) -> Manager:
    return build_manager(KubeApi(api), metrics.read_many, **manager_options(**kwargs))


def running(emu: KubeEmulator, metrics: FakeMetrics, **kwargs: Any) -> contextlib.AbstractAsyncContextManager[Manager]:
    """A started manager with this module's settings (see :func:`running_manager`)."""
    return running_manager(emu, metrics.read_many, **manager_options(**kwargs))


FAST_BEHAVIOR = {"scaleDown": {"stabilizationWindowSeconds": 0}}
