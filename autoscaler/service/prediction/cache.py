"""The forecasts of the targets with ``spec.prediction``, kept fresh in the background, read by their syncs.

A sync never waits on a forecast: it asks :meth:`ForecastCache.current` for the forecasts last made (none
yet: the decision says ``NoForecast``) and goes on. Asking registers the target; a background task
(:meth:`ForecastCache.run`, started by the first ask) refreshes each registered target once a
``stepSeconds``: for each metric it forecasts, one range query of the metric's own PromQL over
``historySeconds`` at ``stepSeconds`` (from the metric's backend; the values of the series summed at each
step, as a sync sums an External metric's series), then the forecast
(:func:`~autoscaler.core.prediction.forecast.forecast`) in a worker thread: Holt-Winters' fit is a few
hundred milliseconds of arithmetic on a long history, which the event loop must not wait on.

A forecast made at a refresh serves the syncs until the next one, a step later: it is the largest forecast
from ``now + horizon`` to ``now + step + horizon`` (``until``), so each of those syncs' own instant is
covered. A range query that fails gives the metric a ``MetricFailed`` forecast until one succeeds; a target
no sync asked about for a while (deleted, moved to another shard, no longer predicting) is forgotten.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from autoscaler.core.prediction.forecast import Forecast, failed, forecast
from autoscaler.core.prediction.spec import PredictionSpec
from autoscaler.core.spec import MetricSpec, TargetSpec
from autoscaler.prometheus.backends import backend_of
from autoscaler.prometheus.errors import PrometheusError
from autoscaler.prometheus.extract import LabelNames
from autoscaler.prometheus.queries import QueryBuilder, TargetQuery, Unplannable
from autoscaler.prometheus.results import RangeResult
from autoscaler.prometheus.settings import PrometheusSettings

log = structlog.get_logger("autoscaler.prediction")

# A target no sync asked about for this long (and at least three of its periods) is forgotten.
FORGET_AFTER_SECONDS = 600.0
Key = tuple[str, str]  # namespace, name


class RangeSource(Protocol):
    """A backend's client as the cache uses it (:class:`~autoscaler.prometheus.client.PrometheusClient`)."""

    @property
    def settings(self) -> PrometheusSettings: ...

    async def query_range(self, promql: str, start: float, end: float, step: float) -> RangeResult: ...


Sources = Callable[[str], RangeSource | None]  # a backend's client by name (default, or prometheus.backends')


@dataclass
class _Watch:
    """One target's forecasting: what to query, and the forecasts last made."""

    query: TargetQuery  # the target, for rendering its metrics' queries
    prediction: PredictionSpec
    composite: bool
    period: float  # the target's sync period: part of the horizon
    spec: TargetSpec
    asked: float  # when a sync last asked (the decisions' clock)
    forecasts: dict[str, Forecast] = field(default_factory=dict)
    refreshed: float | None = None  # when the forecasts were made


class ForecastCache:
    """See the module docstring. ``sources``: each backend's client by name; ``clock``: the decisions' "now"
    (Unix seconds); ``check_every``: how often the background task looks for a target due a refresh."""

    def __init__(
        self, sources: Sources, clock: Callable[[], float], *, check_every: float = 5.0, concurrency: int = 4
    ) -> None:
        self._sources = sources
        self._clock = clock
        self._check_every = check_every
        self._limit = asyncio.Semaphore(concurrency)
        self._watches: dict[Key, _Watch] = {}
        self._builders: dict[str, tuple[PrometheusSettings, QueryBuilder]] = {}
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def current(
        self, namespace: str, name: str, spec: TargetSpec, selector: str, period: float, now: float
    ) -> Mapping[str, Forecast]:
        """The forecasts last made for the target (by metric name; empty until the first refresh), registering
        it (again, when its spec changed) for the background refreshes, which this starts if they are not
        running."""
        prediction = spec.prediction
        if prediction is None:
            self._watches.pop((namespace, name), None)
            return {}
        key = (namespace, name)
        watch = self._watches.get(key)
        if watch is None or watch.spec is not spec or watch.period != period:
            query = TargetQuery(namespace, name, spec.scale_target_ref, selector, (), spec.metrics)
            watch = _Watch(query, prediction, spec.composite is not None, period, spec, now)
            self._watches[key] = watch
            self._wake.set()
        watch.asked = now
        self._start()
        return watch.forecasts

    def forget(self, namespace: str, name: str) -> None:
        self._watches.pop((namespace, name), None)

    def states(self) -> list[tuple[str, str, dict[str, Forecast]]]:
        """Each watched target's forecasts (namespace, name, by metric name), for the gauges."""
        return [(ns, name, dict(watch.forecasts)) for (ns, name), watch in self._watches.items()]

    async def refresh_due(self) -> int:
        """Refresh every target due (never refreshed, or a step since), forget the ones no sync asks about;
        how many were refreshed."""
        now = self._clock()
        due: list[_Watch] = []
        for key, watch in list(self._watches.items()):
            if now - watch.asked > max(FORGET_AFTER_SECONDS, 3 * watch.period):
                del self._watches[key]
            elif watch.refreshed is None or now - watch.refreshed >= watch.prediction.step_seconds:
                due.append(watch)
        await asyncio.gather(*(self._refresh(watch) for watch in due))
        return len(due)

    async def run(self) -> None:
        """Refresh what is due every ``check_every`` seconds (at once when a target is registered) until
        cancelled."""
        while True:
            self._wake.clear()
            try:
                await self.refresh_due()
            except Exception:  # a bug must not end the refreshes: say it, and try again
                log.exception("forecast refresh failed unexpectedly")
            # asyncio.wait, not wait_for: on Python 3.11 a cancellation that meets wait_for as its inner wait
            # ends is lost, and close() would wait for this task for ever.
            waiter = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({waiter}, timeout=self._check_every)
            finally:
                waiter.cancel()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self.run(), name="forecast-refresh")

    async def _refresh(self, watch: _Watch) -> None:
        prediction = watch.prediction
        now = self._clock()
        step = float(prediction.step_seconds)
        end = math.floor(now / step) * step  # on the step's grid: each refresh reads the same points
        start = end - prediction.history_seconds + step
        horizon = prediction.horizon(watch.period)
        made: dict[str, Forecast] = {}
        async with self._limit:
            for metric in watch.query.metrics:
                if metric.name in made or not prediction.predicts(metric, composite=watch.composite):
                    continue
                history = await self._history(watch, metric, start, end, step)
                if isinstance(history, Forecast):
                    made[metric.name] = history
                    continue
                made[metric.name] = await asyncio.to_thread(
                    forecast, history, now + horizon, prediction, horizon_seconds=horizon, until=now + step + horizon
                )
        watch.forecasts = made
        watch.refreshed = now

    async def _history(
        self, watch: _Watch, metric: MetricSpec, start: float, end: float, step: float
    ) -> list[tuple[float, float]] | Forecast:
        """The metric's history (its series summed at each step), or the failed forecast saying why not."""
        backend = backend_of(metric.backend)
        source = self._sources(backend)
        if source is None:
            return failed(watch.prediction, f"no Prometheus backend named {backend!r}")
        try:
            promql = self._promql(backend, source.settings, watch.query, metric)
            result = await source.query_range(promql, start, end, step)
        except Unplannable as exc:
            return failed(watch.prediction, str(exc))
        except PrometheusError as exc:
            log.warning("forecast history unreadable", metric=metric.name, error=str(exc))
            return failed(watch.prediction, f"the history's range query failed: {exc}")
        sums: dict[float, float] = {}
        for series in result.series:
            for timestamp, value in series.points:
                sums[timestamp] = sums.get(timestamp, 0.0) + float(value)
        return sorted(sums.items())

    def _promql(self, backend: str, settings: PrometheusSettings, query: TargetQuery, metric: MetricSpec) -> str:
        known = self._builders.get(backend)
        if known is None or known[0] is not settings:
            names = LabelNames(
                pod=settings.pod_label, container=settings.container_label, namespace=settings.namespace_label
            )
            known = self._builders[backend] = (settings, QueryBuilder(settings, names))
        builder = known[1]
        return builder.render(
            builder.template_for(metric), query, metric, scope=builder.namespace_scope([query.namespace])
        )
