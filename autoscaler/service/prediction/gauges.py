"""The forecasts in the service's own metrics, read from the cache when /metrics is scraped.

- ``autoscaler_target_prediction_active{namespace, name}``: 1 while the target has a usable forecast (its
  floor is in effect), 0 while it has ``spec.prediction`` and none is usable (short or stale history, high
  error, the history unreadable, none made yet);
- ``autoscaler_target_forecast_value{namespace, name, metric, model}``: the forecast value of each forecast
  metric (usable or not: a forecast ignored for its error still says what it would have said);
- ``autoscaler_target_forecast_error_percent{namespace, name, metric, model}``: its error over the history's
  last season (weighted absolute percentage error), where measured.

A target's series go with it: the cache forgets a target no sync asks about.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from autoscaler.core.prediction.forecast import Forecast

TargetForecasts = tuple[str, str, dict[str, Forecast]]  # namespace, name, forecasts by metric name


class ForecastCollector:
    def __init__(self, source: Callable[[], Iterable[TargetForecasts]]) -> None:
        self._source = source

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        active = GaugeMetricFamily(
            "autoscaler_target_prediction_active",
            "1 while the target (spec.prediction) has a usable forecast, whose replicas are a floor under the "
            "metrics' own proposal; 0 while none is (see its Predicting condition for why).",
            labels=["namespace", "name"],
        )
        value = GaugeMetricFamily(
            "autoscaler_target_forecast_value",
            "The forecast value of each forecast metric a horizon ahead (usable or not), in the metric's units.",
            labels=["namespace", "name", "metric", "model"],
        )
        error = GaugeMetricFamily(
            "autoscaler_target_forecast_error_percent",
            "The forecast's error over the history's last season, in percent (sum of absolute errors over sum "
            "of absolute values); above the target's maxErrorPercent the forecast is not used.",
            labels=["namespace", "name", "metric", "model"],
        )
        for namespace, name, forecasts in self._source():
            active.add_metric([namespace, name], 1.0 if any(f.usable for f in forecasts.values()) else 0.0)
            for metric, made in sorted(forecasts.items()):
                if made.value is not None:
                    value.add_metric([namespace, name, metric, made.model], made.value)
                if made.error_percent is not None:
                    error.add_metric([namespace, name, metric, made.model], made.error_percent)
        yield from (active, value, error)
