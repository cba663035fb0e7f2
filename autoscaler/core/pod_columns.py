"""Per-pod readings held as columns: each pod's value, and the time and window the pods share.

A batched read at 10,000 targets makes 200,000 per-pod readings a period. Held as a
:class:`~autoscaler.core.observation.Sample` (or :class:`~autoscaler.core.observation.PodUsage`) a pod, each
is an object the cyclic collector counts and walks while it lives: the readings alone started most of the
service's young collections. Here a reading is one mapping of values (a dict of numbers, which the collector
does not track) and the time and window its pods share (one answer has one evaluation time); a pod whose
time differs is kept apart in ``times``. A ``Sample``/``PodUsage`` is made when one is asked for, and
dropped by whoever asked.

Both are read-only :class:`~collections.abc.Mapping`\\ s of pod names to what they would have held, equal to
a dict of the same items: the engine reads them as it reads a dict.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

from autoscaler.core.observation import DEFAULT_SAMPLE_WINDOW, PodUsage, Sample

__all__ = ["SampleColumns", "UsageColumns"]

_NO_TIMES: Mapping[str, float] = {}


class _Columns:
    """What both kinds share: the pods' time and window, the odd times, and the mapping's protocol."""

    __slots__ = ("times", "timestamp", "window")

    def __init__(self, timestamp: float, window: float, times: Mapping[str, float] | None) -> None:
        self.timestamp = timestamp
        self.window = window
        self.times = times if times else _NO_TIMES

    def _column(self) -> dict[str, Any]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[str]:
        return iter(self._column())

    def __len__(self) -> int:
        return len(self._column())

    def __contains__(self, pod: object) -> bool:
        return pod in self._column()

    def __eq__(self, other: object) -> bool:
        # Mapping's own, written out: compiled, Mapping's would not be reached (docs/compiled-boundary.md).
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(cast("Mapping[str, Any]", self).items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]  # as Mapping's: equal to a dict, so never hashed


class SampleColumns(_Columns, Mapping[str, Sample]):
    """A Pods metric's samples: ``pod_values`` (milli) by pod."""

    __slots__ = ("pod_values",)

    def __init__(
        self,
        values: dict[str, int],
        timestamp: float,
        window: float = DEFAULT_SAMPLE_WINDOW,
        times: Mapping[str, float] | None = None,
    ) -> None:
        super().__init__(timestamp, window, times)
        self.pod_values = values

    def _column(self) -> dict[str, Any]:
        return self.pod_values

    def __getitem__(self, pod: str) -> Sample:
        return Sample(self.pod_values[pod], self.times.get(pod, self.timestamp), self.window)

    def samples(self) -> dict[str, Sample]:
        """Every pod's :class:`Sample`, made in one go (a decision reads the values' dict instead, and makes
        a ``Sample`` only for a pod whose time it needs)."""
        timestamp, window, times = self.timestamp, self.window, self.times
        return {pod: Sample(value, times.get(pod, timestamp), window) for pod, value in self.pod_values.items()}

    def __repr__(self) -> str:
        return f"SampleColumns({self.samples()!r})"


class UsageColumns(_Columns, Mapping[str, PodUsage]):
    """A resource's usage: ``containers`` by pod, each a dict of its containers' values (milli, None for
    a value that is not a number)."""

    __slots__ = ("containers",)

    def __init__(
        self,
        containers: dict[str, dict[str, int | None]],
        timestamp: float,
        window: float = DEFAULT_SAMPLE_WINDOW,
        times: Mapping[str, float] | None = None,
    ) -> None:
        super().__init__(timestamp, window, times)
        self.containers = containers

    def _column(self) -> dict[str, Any]:
        return self.containers

    def __getitem__(self, pod: str) -> PodUsage:
        return PodUsage(self.containers[pod], self.times.get(pod, self.timestamp), self.window)

    def __repr__(self) -> str:
        return f"UsageColumns({dict(self)!r})"
