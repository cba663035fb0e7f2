"""Controller settings: the values kube-controller-manager takes as flags, per target when needed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(slots=True, init=False, unsafe_hash=True)
class Tolerances:
    """Usage-ratio tolerances. A ratio is within them iff ``1 - scale_down ≤ ratio ≤ 1 + scale_up``."""

    scale_down: Final[float]
    scale_up: Final[float]

    def __init__(self, scale_down: float = 0.1, scale_up: float = 0.1) -> None:
        self.scale_down = scale_down
        self.scale_up = scale_up

    def is_within(self, ratio: float) -> bool:
        # Float comparisons in this order, exactly as upstream's Tolerances.isWithin.
        return (1.0 - self.scale_down) <= ratio <= (1.0 + self.scale_up)


DEFAULT_TOLERANCES = Tolerances()


@dataclass(slots=True, init=False, unsafe_hash=True)
class ControllerSettings:
    """Seconds throughout. Defaults are kube-controller-manager's."""

    tolerances: Final[Tolerances]
    cpu_initialization_period: Final[float]
    initial_readiness_delay: Final[float]
    downscale_stabilization_window: Final[float]

    def __init__(
        self,
        tolerances: Tolerances = DEFAULT_TOLERANCES,
        cpu_initialization_period: float = 300.0,
        initial_readiness_delay: float = 30.0,
        downscale_stabilization_window: float = 300.0,
    ) -> None:
        self.tolerances = tolerances
        self.cpu_initialization_period = cpu_initialization_period
        self.initial_readiness_delay = initial_readiness_delay
        self.downscale_stabilization_window = downscale_stabilization_window


DEFAULT_SETTINGS = ControllerSettings()
