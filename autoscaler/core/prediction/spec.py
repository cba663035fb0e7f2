"""``spec.prediction``: a target's opt-in to predictive scale-up (the fields, their defaults and their rules).

A target with ``prediction`` forecasts its Object and External metrics' values ``horizon`` seconds ahead from
their own Prometheus history (:mod:`autoscaler.core.prediction.forecast`) and scales to at least the replicas
the forecast asks for; the forecast only ever raises the count (docs/decisions.md, "Predictive scale-up").

- ``model``: ``seasonalNaive`` (the value one season before the forecast instant), ``holtWinters`` (additive
  Holt-Winters, the trend optionally damped: ``dampedTrend``) or ``auto`` (the default: the one with the lower
  backtested error over the history's last season).
- ``seasonSeconds`` (default 86400, a day; 604800 is a week): the period the load repeats with. A whole
  number of ``stepSeconds``.
- ``podStartupSeconds``: how long a new replica takes to serve; the horizon is this plus the target's sync
  period unless ``horizonSeconds`` says otherwise. One of the two is required; the horizon is less than a
  season (a seasonal model cannot see further ahead).
- ``stepSeconds`` (default 300): the history's resolution (the range query's step).
- ``historySeconds``: how far back the range query reaches; default the model's need: two seasons for
  ``seasonalNaive`` (one to look back on, one to measure the error over), three for ``holtWinters`` and
  ``auto`` (one to start from, one to fit on, one to measure).
- ``minHistorySeconds``: a shorter history is not used (reason ``ShortHistory``); default, and at least,
  two seasons (no error can be measured on less); at most ``historySeconds``.
- ``maxErrorPercent`` (default 25): the forecast is ignored (reason ``HighError``) while its error over the
  history's last season (sum of absolute errors over sum of absolute values, in percent) is above it.
- ``metrics``: the names of the metrics to forecast; default every Object and External metric. Per-pod
  metrics (Resource, ContainerResource, Pods) are averages over the pods, which move with the replica count
  the forecast changes: their history does not repeat with the load, so they cannot be listed.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from autoscaler.values.fields import Obj

if TYPE_CHECKING:  # autoscaler.core.spec imports this module (TargetSpec.prediction)
    from autoscaler.core.spec import MetricSpec

DAY_SECONDS = 86_400
WEEK_SECONDS = 7 * DAY_SECONDS
DEFAULT_SEASON_SECONDS = DAY_SECONDS
DEFAULT_STEP_SECONDS = 300
DEFAULT_MAX_ERROR_PERCENT = 25.0
# The sync period a horizon is computed with where the caller does not say (the service's default period).
DEFAULT_SYNC_PERIOD_SECONDS = 15
# A season longer than four weeks needs months of history at least; a step under 10 s asks Prometheus for
# more points than a range query returns (11,000) over two days.
MAX_SEASON_SECONDS = 4 * WEEK_SECONDS
MIN_STEP_SECONDS = 10
MAX_STEP_SECONDS = 3600
# Prometheus refuses a range query of more than 11,000 points; the history is read in one.
MAX_HISTORY_POINTS = 11_000


class PredictionModel(enum.StrEnum):
    SEASONAL_NAIVE = "seasonalNaive"
    HOLT_WINTERS = "holtWinters"
    AUTO = "auto"


def default_history_seasons(model: PredictionModel) -> int:
    """Whole seasons of history a model reads by default: seasonal naive looks one back and is measured over
    the next; Holt-Winters starts from one, fits its parameters on the next and is measured over the third.
    ``auto`` reads three, so as to try Holt-Winters (it forecasts with seasonal naive on two)."""
    return 2 if model is PredictionModel.SEASONAL_NAIVE else 3


@dataclass(slots=True, init=False, unsafe_hash=True)
class PredictionSpec:
    """A parsed, valid ``spec.prediction`` (seconds throughout)."""

    model: Final[PredictionModel]
    season_seconds: Final[int]
    pod_startup_seconds: Final[int | None]
    horizon_seconds: Final[int | None]
    step_seconds: Final[int]
    history_seconds: Final[int]
    min_history_seconds: Final[int]
    max_error_percent: Final[float]
    damped_trend: Final[bool]
    metrics: Final[tuple[str, ...]]  # empty: every Object and External metric

    def __init__(
        self,
        model: PredictionModel = PredictionModel.AUTO,
        season_seconds: int = DEFAULT_SEASON_SECONDS,
        pod_startup_seconds: int | None = None,
        horizon_seconds: int | None = None,
        step_seconds: int = DEFAULT_STEP_SECONDS,
        history_seconds: int = 3 * DEFAULT_SEASON_SECONDS,
        min_history_seconds: int = 2 * DEFAULT_SEASON_SECONDS,
        max_error_percent: float = DEFAULT_MAX_ERROR_PERCENT,
        damped_trend: bool = False,
        metrics: tuple[str, ...] = (),
    ) -> None:
        self.model = model
        self.season_seconds = season_seconds
        self.pod_startup_seconds = pod_startup_seconds
        self.horizon_seconds = horizon_seconds
        self.step_seconds = step_seconds
        self.history_seconds = history_seconds
        self.min_history_seconds = min_history_seconds
        self.max_error_percent = max_error_percent
        self.damped_trend = damped_trend
        self.metrics = metrics

    def horizon(self, sync_period_seconds: float = DEFAULT_SYNC_PERIOD_SECONDS) -> float:
        """How far ahead to forecast: ``horizonSeconds``, else the pods' start-up plus a sync period (a
        replica asked for now serves after its start-up, and the next chance to ask is a period away)."""
        if self.horizon_seconds is not None:
            return float(self.horizon_seconds)
        return float((self.pod_startup_seconds or 0) + sync_period_seconds)

    def predicts(self, metric: MetricSpec, *, composite: bool = False) -> bool:
        """Whether ``metric`` is one this spec forecasts (``composite``: the target has ``spec.composite``,
        which stands for its External metrics)."""
        if not _forecastable(metric, composite):
            return False
        return not self.metrics or metric.name in self.metrics


def read_prediction(obj: Obj, *, metrics: Sequence[MetricSpec] | None, has_composite: bool) -> PredictionSpec | None:
    """``spec.prediction`` (``obj`` is its view) of a spec whose metrics are read (None when invalid); None
    when anything is invalid, each problem added with its path."""
    before = len(obj.errors.items)
    model_text = obj.string("model", default=PredictionModel.AUTO.value, choices=[m.value for m in PredictionModel])
    model = PredictionModel(model_text) if model_text is not None else None
    season = obj.integer("seasonSeconds", default=DEFAULT_SEASON_SECONDS, minimum=60, maximum=MAX_SEASON_SECONDS)
    step = obj.integer("stepSeconds", default=DEFAULT_STEP_SECONDS, minimum=MIN_STEP_SECONDS, maximum=MAX_STEP_SECONDS)
    startup = obj.integer("podStartupSeconds", minimum=0, maximum=MAX_SEASON_SECONDS)
    horizon = obj.integer("horizonSeconds", minimum=1, maximum=MAX_SEASON_SECONDS)
    history = obj.integer("historySeconds", minimum=1, maximum=MAX_SEASON_SECONDS * 4)
    min_history = obj.integer("minHistorySeconds", minimum=1, maximum=MAX_SEASON_SECONDS * 4)
    max_error = obj.number("maxErrorPercent", default=DEFAULT_MAX_ERROR_PERCENT, minimum=0)
    damped = obj.boolean("dampedTrend", default=False)
    names = _metric_names(obj, metrics, has_composite)
    if not obj.has("podStartupSeconds") and not obj.has("horizonSeconds"):
        obj.errors.add(obj.path, "must set podStartupSeconds, horizonSeconds or both: how far ahead the forecast looks")
    if season is not None and step is not None and season % step != 0:
        obj.error("seasonSeconds", f"must be a whole number of stepSeconds ({step})")
    if season is not None and horizon is not None and horizon >= season:
        obj.error(
            "horizonSeconds", f"must be less than seasonSeconds ({season}): a season is as far as a seasonal model sees"
        )
    if season is not None and startup is not None and horizon is None and startup >= season:
        obj.error(
            "podStartupSeconds",
            f"must be less than seasonSeconds ({season}): the horizon is start-up plus a sync period",
        )
    history_default = season * default_history_seasons(model) if season is not None and model is not None else None
    history = history if history is not None else history_default
    least = 2 * season if season is not None else None
    if least is not None and history is not None and history < least and obj.has("historySeconds"):
        obj.error(
            "historySeconds",
            f"must be at least two seasons ({least}): one to look back on, one to measure the error over",
        )
    if least is not None and min_history is not None and min_history < least:
        obj.error("minHistorySeconds", f"must be at least two seasons ({least}): no error can be measured on less")
    if history is not None and min_history is not None and min_history > history:
        obj.error("minHistorySeconds", f"must be at most historySeconds ({history})")
    if history is not None and step is not None and history // step > MAX_HISTORY_POINTS:
        obj.error(
            "historySeconds" if obj.has("historySeconds") else "stepSeconds",
            f"the history is read in one range query of at most {MAX_HISTORY_POINTS} points: "
            f"historySeconds / stepSeconds is {history // step}",
        )
    obj.finish()
    if (
        len(obj.errors.items) > before
        or model is None
        or season is None
        or step is None
        or history is None
        or max_error is None
        or damped is None
        or names is None
    ):
        return None
    return PredictionSpec(
        model=model,
        season_seconds=season,
        pod_startup_seconds=startup,
        horizon_seconds=horizon,
        step_seconds=step,
        history_seconds=history,
        min_history_seconds=min_history if min_history is not None else min(history, 2 * season),
        max_error_percent=max_error,
        damped_trend=damped,
        metrics=names,
    )


def _metric_names(obj: Obj, metrics: Sequence[MetricSpec] | None, has_composite: bool) -> tuple[str, ...] | None:
    """``metrics``: names of the target's Object or External metrics (External ones not with a composite,
    which stands for them); with none listed, the target needs at least one such metric."""
    names: list[str] = []
    for path, element in obj.items("metrics"):
        if not isinstance(element, str) or not element:
            obj.errors.add(path, "must be the name of one of the target's Object or External metrics")
            continue
        names.append(element)
        if metrics is None:
            continue
        found = [m for m in metrics if m.name == element]
        if not found:
            known = sorted({m.name for m in metrics if not m.is_pod_metric})
            obj.errors.add(path, f'Not found: "{element}": the Object and External metrics are {known}')
        elif all(m.is_pod_metric for m in found):
            obj.errors.add(
                path,
                f'Invalid value: "{element}": a per-pod metric (its value is an average over the pods, which '
                "moves with the replica count, not with the load); only Object and External metrics are forecast",
            )
        elif has_composite and all(m.type.value == "External" for m in found):
            obj.errors.add(
                path,
                f'Invalid value: "{element}": with spec.composite the composite stands for the External metrics',
            )
    if metrics is not None and not names and not any(_forecastable(m, has_composite) for m in metrics):
        obj.errors.add(
            obj.path,
            "needs an Object or External metric to forecast (per-pod metrics' values move with the replica count)",
        )
    if len(names) != len(set(names)):
        obj.error("metrics", "must not name a metric twice")
    return tuple(names)


def _forecastable(metric: MetricSpec, has_composite: bool) -> bool:
    if metric.is_pod_metric:
        return False
    return not (has_composite and metric.type.value == "External")
