"""The forecast cache (service/prediction/cache.py) against a real Prometheus holding a repeating ramp (written
with promtool's backfill): each metric's history read with a range query (its series summed), the forecast
made off the event loop once a step, the gauges; a history that cannot be read is MetricFailed. And the CRD
(through the API emulator) refuses an invalid spec.prediction."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from autoscaler.core.prediction.forecast import REASON_METRIC_FAILED
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.prometheus.client import PrometheusClient
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.service.prediction.cache import ForecastCache, RangeSource
from autoscaler.service.prediction.gauges import ForecastCollector
from autoscaler.service.telemetry.metrics import ServiceMetrics
from autoscaler_sandbox import PrometheusSandbox
from autoscaler_sandbox.history import OpenMetricsHistory
from kube_emulator import KubeEmulator
from kube_emulator.errors import ApiError
from tests.service.cluster import target

pytestmark = pytest.mark.prometheus

SEASON = 600  # ten minutes: the ramp repeats every season
STEP = 10
# "Now" at the start of each test: 330 s into a season, 10 s before the ramp begins (the history ends here).
T0 = 1_700_000_000 - 1_700_000_000 % SEASON + 330


def load(t: float) -> float:
    """Queue depth 10 most of the season, a ramp to 100 at 340-400 s, 100 until 500 s, back to 10 by 560 s."""
    offset = t % SEASON
    if offset < 340:
        return 10.0
    if offset < 400:
        return 10.0 + 90.0 * (offset - 340) / 60
    if offset < 500:
        return 100.0
    if offset < 560:
        return 100.0 - 90.0 * (offset - 500) / 60
    return 10.0


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusSandbox]:
    history = OpenMetricsHistory()
    for t in range(T0 - 4 * SEASON, T0 + 1, STEP):
        history.add("queue_depth", {"queue": "jobs"}, t, f"{load(t):g}")
        history.add("queue_depth", {"queue": "mail"}, t, "0")  # a second series: summed, as a sync sums them
    prom = PrometheusSandbox()
    try:
        prom.backfill(history.text())
        prom.start()
        yield prom
    finally:
        prom.close()


@pytest.fixture
async def client(prometheus: PrometheusSandbox) -> AsyncIterator[PrometheusClient]:
    async with PrometheusClient(PrometheusSettings(url=prometheus.url)) as opened:
        yield opened


PREDICTION = {"model": "seasonalNaive", "seasonSeconds": SEASON, "stepSeconds": STEP, "podStartupSeconds": 60}


def queue_target(**prediction: Any) -> dict[str, Any]:
    worker = target("worker", "worker")
    worker["spec"]["metrics"][0]["external"]["query"] = "sum(queue_depth)"
    worker["spec"]["behavior"] = {"scaleUp": {"policies": [{"type": "Pods", "value": 100, "periodSeconds": 15}]}}
    worker["spec"]["prediction"] = {**PREDICTION, **prediction}
    return worker


def sources(client: PrometheusClient) -> Any:
    def source(name: str) -> RangeSource | None:
        return client if name == "default" else None

    return source


async def test_the_cache_forecasts_from_the_range_query_off_the_sync(client: PrometheusClient) -> None:
    now = float(T0)
    cache = ForecastCache(sources(client), lambda: now)
    spec = parse_target_spec(queue_target()["spec"])
    assert cache.current("default", "worker", spec, "app=worker", 15.0, now) == {}  # none yet: never waits
    assert await cache.refresh_due() == 1
    made = cache.current("default", "worker", spec, "app=worker", 15.0, now)["queue"]
    # The largest forecast from now + 75 s (start-up and a period) to a step later: the ramp a season ago.
    assert made.usable and made.model == "seasonalNaive"
    assert made.value == pytest.approx(load(T0 + 75 + STEP))
    assert made.error_percent == pytest.approx(0.0, abs=1e-6)
    assert await cache.refresh_due() == 0  # refreshed once a step, not at every ask
    now += STEP
    assert await cache.refresh_due() == 1

    registry = ServiceMetrics(process_metrics=False)
    registry.registry.register(ForecastCollector(cache.states))
    text = registry.render().decode()
    assert 'autoscaler_target_prediction_active{name="worker",namespace="default"} 1.0' in text
    assert (
        'autoscaler_target_forecast_value{metric="queue",model="seasonalNaive",name="worker",namespace="default"}'
        in text
    )
    await cache.close()


async def test_a_history_that_cannot_be_read_is_metric_failed(client: PrometheusClient) -> None:
    cache = ForecastCache(sources(client), lambda: float(T0))
    broken = queue_target()
    broken["spec"]["metrics"][0]["external"]["query"] = "sum(queue_depth"  # Prometheus refuses it
    spec = parse_target_spec(broken["spec"])
    cache.current("default", "worker", spec, "app=worker", 15.0, T0)
    await cache.refresh_due()
    made = cache.current("default", "worker", spec, "app=worker", 15.0, T0)["queue"]
    assert (made.usable, made.reason) == (False, REASON_METRIC_FAILED)
    assert "range query failed" in made.message
    other = queue_target()
    other["spec"]["metrics"][0]["external"]["backend"] = "tenant-b"
    spec = parse_target_spec(other["spec"])
    cache.current("default", "other", spec, "app=worker", 15.0, T0)
    await cache.refresh_due()
    made = cache.current("default", "other", spec, "app=worker", 15.0, T0)["queue"]
    assert made.reason == REASON_METRIC_FAILED and "no Prometheus backend named 'tenant-b'" in made.message
    await cache.close()


def test_the_crd_refuses_an_invalid_prediction(emu: KubeEmulator) -> None:
    for prediction, message in [
        ({"model": "auto"}, "must set podStartupSeconds, horizonSeconds or both"),
        ({"podStartupSeconds": 60, "stepSeconds": 700}, "must be a whole number of stepSeconds"),
        ({"horizonSeconds": 90000}, "must be less than seasonSeconds"),
        (
            {"podStartupSeconds": 60, "historySeconds": 200000, "minHistorySeconds": 300000},
            "must be at most historySeconds",
        ),
        ({"podStartupSeconds": 60, "model": "prophet"}, "Unsupported value"),
    ]:
        bad = target("bad", "worker")
        bad["spec"]["prediction"] = prediction
        with pytest.raises(ApiError) as refused:
            emu.create(bad)
        assert message in str(refused.value), (prediction, str(refused.value))
    good = target("good", "worker")
    good["spec"]["prediction"] = {"podStartupSeconds": 90, "maxErrorPercent": 12.5, "metrics": ["queue"]}
    emu.create(good)
    assert parse_target_spec(emu.get("scalingtargets.autoscaler.dev", "good", "default")["spec"]).prediction is not None
