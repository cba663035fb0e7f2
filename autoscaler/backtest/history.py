"""History from range queries: the sync grid, range splitting, and instant answers from fetched ranges.

A range query evaluates its PromQL at ``start + i × step`` exactly as an instant query at each of
those times would, so the service's :class:`~autoscaler.prometheus.reader.MetricsReader` can read a
backtest's metrics unchanged: :class:`HistoryClient` answers its instant queries from range results
fetched one chunk of the grid at a time (memory stays bounded by the chunk, whatever the range).

Prometheus refuses a range query whose result would hold more than 11,000 points per series
("exceeded maximum resolution of 11,000 points per timeseries"); :func:`fetch_matrix` splits every
range into queries below that limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from autoscaler.backtest.limits import MAX_POINTS_PER_QUERY
from autoscaler.prometheus.errors import PrometheusError
from autoscaler.prometheus.results import InstantResult, RangeResult, Series, SeriesFilter
from autoscaler.prometheus.slicing import SeriesSink


@dataclass(frozen=True, slots=True)
class Grid:
    """Evenly spaced times ``start_ms + k × step_ms`` for ``k`` in ``[0, count)``, in integer
    milliseconds (Prometheus' own resolution), so that times never drift by float error."""

    start_ms: int
    step_ms: int
    count: int

    @classmethod
    def between(cls, start: float, end: float, step: float) -> Grid:
        start_ms, end_ms, step_ms = round(start * 1000), round(end * 1000), round(step * 1000)
        return cls(start_ms, step_ms, (end_ms - start_ms) // step_ms + 1)

    @property
    def end_ms(self) -> int:
        return self.start_ms + (self.count - 1) * self.step_ms

    @property
    def step(self) -> float:
        return self.step_ms / 1000

    def time_ms(self, index: int) -> int:
        return self.start_ms + index * self.step_ms

    def times(self) -> Iterator[int]:
        return (self.start_ms + k * self.step_ms for k in range(self.count))

    def chunks(self, points: int) -> Iterator[Grid]:
        """Consecutive sub-grids of at most ``points`` times each, covering this one."""
        for first in range(0, self.count, points):
            yield Grid(self.time_ms(first), self.step_ms, min(points, self.count - first))

    def from_time(self, t_ms: int) -> Grid:
        """The rest of this grid from ``t_ms`` (a time of the grid) on."""
        skipped = (t_ms - self.start_ms) // self.step_ms
        return Grid(t_ms, self.step_ms, self.count - skipped)


class RangeQuerier(Protocol):
    async def query_range(self, promql: str, start: float, end: float, step: float) -> RangeResult: ...


@dataclass(slots=True)
class Matrix:
    """A range result by time: the instant vector at each time of the grid it was fetched for."""

    start_ms: int
    by_time: dict[int, list[Series]] = field(default_factory=dict)

    def add(self, result: RangeResult) -> None:
        for series in result.series:
            labels = series.labels
            for timestamp, value in series.points:
                t_ms = round(timestamp * 1000)
                self.by_time.setdefault(t_ms, []).append(Series(labels, t_ms / 1000, value))

    def at(self, t_ms: int) -> list[Series]:
        return self.by_time.get(t_ms, [])


@dataclass
class FetchStats:
    range_queries: int = 0
    points: int = 0


async def fetch_matrix(
    client: RangeQuerier,
    promql: str,
    grid: Grid,
    *,
    max_points: int = MAX_POINTS_PER_QUERY,
    stats: FetchStats | None = None,
) -> Matrix:
    """``promql`` at every time of ``grid``, with as many range queries as the points limit needs."""
    parts = list(grid.chunks(max_points))
    results = await asyncio.gather(
        *(client.query_range(promql, part.start_ms / 1000, part.end_ms / 1000, part.step) for part in parts)
    )
    matrix = Matrix(grid.start_ms)
    for result in results:
        matrix.add(result)
        if stats is not None:
            stats.range_queries += 1
            stats.points += sum(len(s.points) for s in result.series)
    return matrix


class HistoryClient:
    """Answers instant queries at the grid's times from range results of the current chunk.

    :meth:`fetch` loads a chunk (the next one can load while the current one replays);
    :meth:`use` makes it current. A query the plan did not know (one whose text depends on the
    pods, e.g. a template with ``<<pods>>``) is fetched when first asked, from that time to the
    chunk's end. A failed fetch is kept in :attr:`error` so that the backtest stops: history that
    could not be read is not history in which a metric failed.
    """

    def __init__(self, client: RangeQuerier, *, max_points: int = MAX_POINTS_PER_QUERY) -> None:
        self._client = client
        self._max_points = max_points
        self._chunk: Grid | None = None
        self._matrices: dict[str, Matrix] = {}
        self.error: PrometheusError | None = None
        self.stats = FetchStats()

    async def fetch(self, chunk: Grid, queries: Mapping[str, str]) -> dict[str, Matrix]:
        """Fetch each query over ``chunk``; ``queries`` maps the text asked for to the PromQL sent
        (a per-pod query restricted to the target's pods, for example)."""
        texts = list(queries)
        try:
            matrices = await asyncio.gather(
                *(
                    fetch_matrix(self._client, queries[text], chunk, max_points=self._max_points, stats=self.stats)
                    for text in texts
                )
            )
        except PrometheusError as error:
            self.error = self.error or error
            raise
        return dict(zip(texts, matrices, strict=True))

    def use(self, chunk: Grid, matrices: Mapping[str, Matrix]) -> None:
        self._chunk = chunk
        self._matrices = dict(matrices)

    def vector(self, text: str, t_ms: int) -> list[Series]:
        """The fetched vector of ``text`` at ``t_ms`` (a query of the current chunk's plan)."""
        matrix = self._matrices.get(text)
        return matrix.at(t_ms) if matrix is not None else []

    async def query(
        self,
        promql: str,
        at: float | None,
        *,
        deadline: float | None = None,
        keep: SeriesFilter | None = None,
        sink: SeriesSink | None = None,
    ) -> InstantResult:
        """The fetched value at ``at`` (a replay always asks for a time; ``deadline``, ``keep`` and ``sink``
        are the live client's, not used here: the answer is a vector)."""
        if at is None:
            raise ValueError("HistoryClient.query needs a time")
        t_ms = round(at * 1000)
        matrix = self._matrices.get(promql)
        if matrix is None or t_ms < matrix.start_ms:
            if self._chunk is None:
                raise RuntimeError("HistoryClient.query before use()")
            try:
                matrix = await fetch_matrix(
                    self._client, promql, self._chunk.from_time(t_ms), max_points=self._max_points, stats=self.stats
                )
            except PrometheusError as error:
                self.error = self.error or error
                raise
            self._matrices[promql] = matrix
        return InstantResult("vector", vector=tuple(matrix.at(t_ms)))
