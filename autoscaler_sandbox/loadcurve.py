"""The demo's synthetic load: requests per second over demo time, in named phases."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Phase:
    name: str
    seconds: float
    start: float  # requests per second when the phase begins
    end: float  # ... and when it ends (linear in between)


@dataclass(frozen=True)
class LoadCurve:
    phases: Sequence[Phase]

    @property
    def duration(self) -> float:
        return sum(phase.seconds for phase in self.phases)

    def _locate(self, t: float) -> tuple[Phase, float]:
        """The phase at demo time ``t`` and how far into it; past the end, the end of the last one."""
        offset = max(0.0, t)
        for phase in self.phases:
            if offset < phase.seconds:
                return phase, offset
            offset -= phase.seconds
        last = self.phases[-1]
        return last, last.seconds

    def load(self, t: float) -> float:
        """Requests per second at demo time ``t`` (held at the last value past the end)."""
        phase, into = self._locate(t)
        if phase.seconds <= 0:
            return phase.end
        return phase.start + (phase.end - phase.start) * into / phase.seconds

    def phase(self, t: float) -> str:
        return self._locate(t)[0].name

    def peak(self) -> float:
        return max(max(phase.start, phase.end) for phase in self.phases)


# 12 minutes: a steady start, a steady rise, a spike that needs more than maxReplicas, a fall, and a
# quiet tail long enough for the scale-down window and rate policy to bring the replicas back down.
DEMO_CURVE = LoadCurve(
    (
        Phase("calm", 60, 180, 180),
        Phase("rise", 210, 180, 1000),
        Phase("spike", 120, 1700, 1700),
        Phase("fall", 120, 900, 150),
        Phase("quiet", 210, 150, 150),
    )
)
