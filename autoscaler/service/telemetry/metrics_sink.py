"""What a reconciler reports to the service's own /metrics (implemented by
:class:`autoscaler.service.telemetry.metrics.ServiceMetrics`; :class:`NullMetrics` for tests and tools)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class MetricsSink(Protocol):
    """What a reconciler reports to the service's own /metrics."""

    def observe_reconcile(
        self, namespace: str, name: str, seconds: float, result: str, error_reason: str | None = None
    ) -> None: ...
    def observe_schedule_lag(self, seconds: float) -> None: ...
    def set_target(
        self,
        namespace: str,
        name: str,
        *,
        current: int | None,
        proposal: int | None,
        final: int | None,
        limited_reason: str | None = None,
        metrics: Sequence[tuple[str, float | None, float | None]] = (),
        pause: tuple[str, float] | None = None,
        sync_period: float | None = None,
    ) -> None: ...
    def set_target_conditions(self, namespace: str, name: str, conditions: Mapping[str, bool | None]) -> None: ...
    def count_scale_event(self, namespace: str, name: str, direction: str) -> None: ...
    def set_write_backoff(self, namespace: str, name: str, path: str, seconds: float) -> None: ...
    def count_write_failure(self, kind: str) -> None: ...
    def count_event_dropped(self) -> None: ...
    def forget_target(self, namespace: str, name: str) -> None:
        """Remove every series of a target (deleted, another instance's now, or no longer decided here)."""


class NullMetrics:
    def observe_reconcile(
        self, namespace: str, name: str, seconds: float, result: str, error_reason: str | None = None
    ) -> None:
        pass

    def observe_schedule_lag(self, seconds: float) -> None:
        pass

    def set_target(
        self,
        namespace: str,
        name: str,
        *,
        current: int | None,
        proposal: int | None,
        final: int | None,
        limited_reason: str | None = None,
        metrics: Sequence[tuple[str, float | None, float | None]] = (),
        pause: tuple[str, float] | None = None,
        sync_period: float | None = None,
    ) -> None:
        pass

    def set_target_conditions(self, namespace: str, name: str, conditions: Mapping[str, bool | None]) -> None:
        pass

    def count_scale_event(self, namespace: str, name: str, direction: str) -> None:
        pass

    def set_write_backoff(self, namespace: str, name: str, path: str, seconds: float) -> None:
        pass

    def count_write_failure(self, kind: str) -> None:
        pass

    def count_event_dropped(self) -> None:
        pass

    def forget_target(self, namespace: str, name: str) -> None:
        pass
