"""Reading the controller settings: the one set of rules for ``autoscaler run``, ``simulate`` and ``backtest``.

The same four values are read from two places: the ``controller`` section of the service's settings
file (which ``run`` and ``backtest --config`` read; its keys end in ``Seconds``) and the ``settings``
section of a scenario (``simulate``; the same keys without ``Seconds``, a public contract). The rules:

* ``tolerance``: a number from 0 to 10, or ``{scaleUp, scaleDown}``, each from 0 to 10 (an absent
  direction keeps the default 0.1). A single tolerance of 0 means the default, 0.1, as in
  kube-controller-manager: its configuration defaulting
  (``pkg/controller/podautoscaler/config/v1alpha1/defaults.go``) replaces an unset — zero —
  ``HorizontalPodAutoscalerTolerance`` with 0.1. A direction's 0 is 0, as it is in a target's
  ``behavior.scaleUp.tolerance``: written per direction, nothing can be unset by accident.
* ``cpuInitializationPeriod`` (default 300 s) and ``initialReadinessDelay`` (30 s): at least 0.
* ``downscaleStabilizationWindow`` (300 s): from 0 to 3600, the range a target's own
  ``behavior.scaleDown.stabilizationWindowSeconds`` has.
"""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.core.settings import ControllerSettings, Tolerances
from autoscaler.values.fields import Obj

MAX_TOLERANCE = 10.0
MAX_DOWNSCALE_WINDOW = 3600.0  # seconds, as behavior.scaleDown.stabilizationWindowSeconds
DEFAULT_TOLERANCE = Tolerances().scale_up  # kube-controller-manager's --horizontal-pod-autoscaler-tolerance

SERVICE_SUFFIX = "Seconds"  # the service's settings file: controller.cpuInitializationPeriodSeconds, ...
SCENARIO_SUFFIX = ""  # a scenario: settings.cpuInitializationPeriod, ...


def read_controller_settings(obj: Obj | None, *, suffix: str) -> ControllerSettings | None:
    """The controller settings in ``obj`` (None: the defaults); None when one is invalid, with every
    problem added to ``obj.errors``. ``suffix`` ends the names of the three durations (see above)."""
    default = ControllerSettings()
    if obj is None:
        return default
    tolerances = _tolerances(obj)
    cpu = obj.number(f"cpuInitializationPeriod{suffix}", default=default.cpu_initialization_period, minimum=0)
    ready = obj.number(f"initialReadinessDelay{suffix}", default=default.initial_readiness_delay, minimum=0)
    window = obj.number(
        f"downscaleStabilizationWindow{suffix}",
        default=default.downscale_stabilization_window,
        minimum=0,
        maximum=MAX_DOWNSCALE_WINDOW,
    )
    obj.finish()
    if tolerances is None or cpu is None or ready is None or window is None:
        return None
    return ControllerSettings(tolerances, cpu, ready, window)


def _tolerances(obj: Obj) -> Tolerances | None:
    if isinstance(obj.value.get("tolerance"), Mapping):
        directions = obj.obj("tolerance")
        assert directions is not None
        up = directions.number("scaleUp", default=DEFAULT_TOLERANCE, minimum=0, maximum=MAX_TOLERANCE)
        down = directions.number("scaleDown", default=DEFAULT_TOLERANCE, minimum=0, maximum=MAX_TOLERANCE)
        directions.finish()
        return None if up is None or down is None else Tolerances(scale_down=down, scale_up=up)
    if obj.value.get("tolerance") is None:  # absent, or null
        obj.mark_known("tolerance")
        return Tolerances()
    value = obj.number("tolerance", minimum=0, maximum=MAX_TOLERANCE)
    if value is None:
        return None
    tolerance = value or DEFAULT_TOLERANCE  # kube-controller-manager's defaulting: 0 is unset
    return Tolerances(scale_down=tolerance, scale_up=tolerance)
