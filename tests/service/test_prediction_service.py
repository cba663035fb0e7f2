"""spec.prediction in the running service (the manager wired as the service wires it, against the API emulator),
its forecasts from a real Prometheus holding a repeating ramp (promtool's backfill): a target scales up ahead of
the ramp its history repeats, the metrics win when they ask for more, and when they fall back the count goes
down to the forecast's floor, never below it; condition Predicting and the gauges say so."""

from __future__ import annotations

import asyncio
import time

import pytest

from autoscaler.prometheus.client import PrometheusClient
from autoscaler.service.prediction.cache import ForecastCache
from autoscaler.service.prediction.gauges import ForecastCollector
from autoscaler.service.telemetry.metrics import ServiceMetrics
from kube_emulator import KubeEmulator
from tests.service.cluster import FakeMetrics, condition, deployment, eventually, replicas_of, status_of
from tests.service.manager_setup import manager_options, running_manager
from tests.service.test_prediction_cache import T0, client, prometheus, queue_target, sources

pytestmark = pytest.mark.prometheus
__all__ = ["client", "prometheus"]  # the fixtures, shared with the cache's tests


def predicting(emu: KubeEmulator) -> tuple[str, str] | None:
    found = condition(status_of(emu, "worker"), "Predicting")
    return None if found is None else (found["status"], found["reason"])


async def test_a_target_scales_up_ahead_of_the_ramp_and_never_down_because_of_the_forecast(
    emu: KubeEmulator, client: PrometheusClient
) -> None:
    started = time.monotonic()

    def clock() -> float:  # the decisions' "now": the end of the history, going on in real time
        return T0 + (time.monotonic() - started)

    cache = ForecastCache(sources(client), clock, check_every=0.2)
    gauges = ServiceMetrics(process_metrics=False)
    gauges.registry.register(ForecastCollector(cache.states))
    emu.create(deployment("worker", 1))
    emu.create(queue_target())
    metrics = FakeMetrics()
    metrics.set("queue", 10)  # now: 10, one replica's worth; the ramp to 100 comes in 10 s
    options = manager_options(forecasts=cache, clock=clock, metrics=gauges)
    try:
        async with running_manager(emu, metrics.read_many, **options):
            await eventually(lambda: replicas_of(emu, "worker") == 10, what="the forecast's 10 replicas")
            assert predicting(emu) == ("True", "ForecastAboveReactive")
            text = gauges.render().decode()
            assert 'autoscaler_target_prediction_active{name="worker",namespace="default"} 1.0' in text

            metrics.set("queue", 150)  # more than foreseen: the metrics decide
            await eventually(lambda: replicas_of(emu, "worker") == 15, what="the metrics' 15")
            assert predicting(emu) == ("True", "ReactiveAtOrAboveForecast")

            metrics.set("queue", 10)  # the metrics fall back: down past the 1 s window, to the forecast's floor
            await eventually(lambda: replicas_of(emu, "worker") == 10, what="down to the forecast's floor")
            seen = []
            for _ in range(10):  # three syncs' worth (0.3 s period)
                seen.append(replicas_of(emu, "worker"))
                await asyncio.sleep(0.1)
            assert min(seen) == 10, "never below the forecast's floor while it foresees the ramp"
    finally:
        await cache.close()
