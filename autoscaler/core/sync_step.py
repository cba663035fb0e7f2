"""One sync step as a replay records it (``simulate``, ``backtest``): when it ran, what it observed, and
what :func:`autoscaler.core.sync.sync` made of it. The service keeps no such record: it writes the
outcome and moves on; a replay keeps every step to print, compare and plot them."""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.decision import Decision
from autoscaler.core.hvpa.decision import HvpaDecision
from autoscaler.core.observation import Observation
from autoscaler.core.sync import SyncOutcome


@dataclass(frozen=True, slots=True)
class StepResult:
    """One sync of a replay: its time, what it observed, its outcome."""

    at: float
    observation: Observation
    outcome: SyncOutcome

    @property
    def decision(self) -> Decision:
        return self.outcome.decision

    @property
    def hvpa(self) -> HvpaDecision | None:
        return self.outcome.hvpa
