"""Controller settings: the values kube-controller-manager takes as flags, per target when needed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Tolerances:
    """Usage-ratio tolerances. A ratio is within them iff ``1 - scale_down ≤ ratio ≤ 1 + scale_up``."""

    scale_down: float = 0.1
    scale_up: float = 0.1

    def is_within(self, ratio: float) -> bool:
        # Float comparisons in this order, exactly as upstream's Tolerances.isWithin.
        return (1.0 - self.scale_down) <= ratio <= (1.0 + self.scale_up)


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """Seconds throughout. Defaults are kube-controller-manager's."""

    tolerances: Tolerances = Tolerances()
    cpu_initialization_period: float = 300.0
    initial_readiness_delay: float = 30.0
    downscale_stabilization_window: float = 300.0


DEFAULT_SETTINGS = ControllerSettings()
