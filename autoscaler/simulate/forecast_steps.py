"""A predicting target in a scenario (``spec.prediction``): a step's ``forecasts``, each forecast metric's
forecast as the service's background refresh would have made it, from that step on (a later step's
``forecasts`` replace them; ``{}``: none). The forecasts themselves are the service's to make from
Prometheus' history; a scenario says what they were, so that the floor rule can be replayed and seen.

A forecast is a quantity (a usable forecast of that value), or ``{value, reason, errorPercent, model}``: with
a ``reason`` (``HighError``, ``ShortHistory``…) it is one the decision ignores, saying why."""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.core.prediction.forecast import Forecast
from autoscaler.values.fields import ErrorList, Obj, to_quantity

FORECASTS_STEP_KEY = "forecasts"
SCENARIO_MODEL = "scenario"  # the model a scenario's forecast names unless it says


def read_step_forecasts(element: object, path: str, errors: ErrorList) -> dict[str, Forecast] | None:
    """The step's forecasts by metric name (``{}``: none from this step on); None when the step has none (the
    previous step's stay)."""
    if not isinstance(element, Mapping) or element.get(FORECASTS_STEP_KEY) is None:
        return None
    where = f"{path}.{FORECASTS_STEP_KEY}"
    section = Obj.of(element[FORECASTS_STEP_KEY], where, errors)
    if section is None:
        return None
    result: dict[str, Forecast] = {}
    for name, value in section.value.items():
        made = _forecast(value, f"{where}.{name}", errors)
        if made is not None:
            result[str(name)] = made
    return result


def _forecast(value: object, path: str, errors: ErrorList) -> Forecast | None:
    if not isinstance(value, Mapping):
        quantity = to_quantity(value, path, errors)
        if quantity is None:
            return None
        number = quantity.milli_value() / 1000
        return Forecast(number, SCENARIO_MODEL, None, True, "", f"the scenario's forecast {number:g}")
    obj = Obj(value, path, errors)
    before = len(errors.items)
    quantity = obj.quantity("value")
    reason = obj.string("reason", default="", non_empty=False)
    error = obj.number("errorPercent", minimum=0)
    model = obj.string("model", default=SCENARIO_MODEL, non_empty=True)
    obj.finish()
    if len(errors.items) > before or reason is None or model is None:
        return None
    value_of: float | None = quantity.milli_value() / 1000 if quantity is not None else None
    if not reason and value_of is None:
        obj.errors.add(path, "a usable forecast needs a value (or a reason it is not usable)")
        return None
    message = (
        f"the scenario's forecast {value_of:g}" if value_of is not None and not reason else f"the scenario's {reason}"
    )
    return Forecast(value_of, model, error, not reason, reason, message)
