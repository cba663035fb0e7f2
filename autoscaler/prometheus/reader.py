"""Turn targets' metric specs into readings: plan the queries, run them, hand each target its readings.

Per sync, a metric costs at most one query per target; with ``batch=True`` (the default) targets whose
per-pod queries render alike share one query scoped to all their namespaces, and the answer is split
back per target. The parts, each in its own module:

* :mod:`~autoscaler.prometheus.queries`: the PromQL a metric of a target is read with;
* :mod:`~autoscaler.prometheus.planning`: which metrics share a query, and the namespace chunks it is
  sent in;
* :mod:`~autoscaler.prometheus.sending`: each target's share of the client's slots, and the backoff of
  queries Prometheus rejected as invalid;
* :mod:`~autoscaler.prometheus.splitting`: a per-pod answer split back per target into readings.

This module ties them: :class:`MetricsReader` runs one sync's queries concurrently and fills in each
metric's reading. :meth:`MetricsReader.read` never raises for a metric's failure: each failed metric
gets a :class:`~autoscaler.core.observation.MetricFailure` saying why, which the engine treats as "this
metric cannot vote for a scale-down".

Isolation, so that one target's trouble stays its own: a target's readings are handed over
(``on_ready``) as soon as its own queries are done, not when the slowest query of the batch is (a slow
External query costs only the targets that read it); a bug while reading fails the metrics of the job it
hit, not the sync.

A partial answer (a Thanos warning naming a store that did not answer, a VictoriaMetrics cluster's
``isPartial``; see :mod:`autoscaler.prometheus.partial`) fails every metric read from it, for every target a
batched query serves, with "partial answer from <url>: <the backend's words>": less data must never read
as less load. Other warnings are logged once per distinct text, with the targets that read the answer.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Sequence

from autoscaler.core.observation import MetricFailure, MetricReading, PodsReading, ResourceReading
from autoscaler.core.spec import MetricSourceType, MetricSpec
from autoscaler.loop.turns import at_once, in_turns
from autoscaler.prometheus.errors import PrometheusError
from autoscaler.prometheus.extract import LabelNames, PodReadings, readings_in_steps
from autoscaler.prometheus.partial import other_warnings, partial_cause, shorten
from autoscaler.prometheus.planning import Chunk, Member, PlannedQuery, PodGroup, PodGroups, QueryPlanner, ValueQueries
from autoscaler.prometheus.queries import TargetQuery, Unplannable
from autoscaler.prometheus.results import InstantResult, emptied_in_steps
from autoscaler.prometheus.sample_times import SampleTimes
from autoscaler.prometheus.sending import (
    InstantQuerier,
    QuerySender,
    StillRejected,
    failed_query_message,
    is_backend_failure,
    shown_query,
)
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.prometheus.splitting import checked, pod_reading, pods_filter, split
from autoscaler.prometheus.templates import SCOPE_SLOT
from autoscaler.prometheus.value_readings import STEP as VALUES_STEP
from autoscaler.prometheus.value_readings import external_reading, object_reading, values_in_steps

__all__ = ["MetricsReader", "OnReady"]

log = logging.getLogger(__name__)

_WARNINGS_REMEMBERED = 1000  # distinct warning texts already logged (forgotten all at once past this)
# Targets planned per turn of the event loop: a 10,000-target service's batch holds ~700 (a 1 s window),
# planned in one go in 50-110 ms (docs/benchmarks-history.md, "Where the loop stalls"); 200 is a few
# milliseconds.
_PLANNED_PER_TURN = 200

# Told each target's readings (its index in the read's list) as soon as all its metrics have one.
OnReady = Callable[[int, list[MetricReading]], None]
# One sync's readings so far: ``out[i][j]`` for ``targets[i].metrics[j]``, None while not read.
Readings = list[list[MetricReading | None]]


class MetricsReader:
    def __init__(
        self,
        client: InstantQuerier,
        settings: PrometheusSettings,
        *,
        batch: bool = True,
        rng: Callable[[], float] = random.random,
        sample_times: SampleTimes | None = None,
    ) -> None:
        self._settings = settings
        # How old or far ahead a sample may be, and Prometheus' clock (a live query's evaluation time).
        self._times = sample_times or SampleTimes(settings.max_sample_age_seconds)
        self._names = LabelNames(
            pod=settings.pod_label, container=settings.container_label, namespace=settings.namespace_label
        )
        self._planner = QueryPlanner(settings, self._names, batch=batch)
        self._sender = QuerySender(client, settings, rng)
        self._warned: set[str] = set()  # warning texts already logged

    async def read(
        self, targets: Sequence[TargetQuery], at: float | None, on_ready: OnReady | None = None
    ) -> list[list[MetricReading]]:
        """``result[i][j]`` is the reading or failure of ``targets[i].metrics[j]`` at Unix time ``at``
        (None: now, by Prometheus' clock). ``on_ready(i, row)`` is called for each target as soon as
        all its metrics have their reading, before slower targets' queries are done.

        The read has one deadline, ``timeout_seconds`` from now: every query it sends ends by it, the per-pod
        chunks and the namespaces a chunk is asked again one by one included, so a read never outlasts it."""
        deadline = asyncio.get_running_loop().time() + self._settings.timeout_seconds
        out: Readings = [[None] * len(t.metrics) for t in targets]
        pod_groups: PodGroups = {}
        value_queries: ValueQueries = {}
        for i, target in enumerate(targets):
            if i and not i % _PLANNED_PER_TURN:
                await asyncio.sleep(0)  # a turn for the loop (nothing else touches these groups meanwhile)
            pods = frozenset(target.pod_names)
            for j, spec in enumerate(target.metrics):
                member = Member(i, j, target, spec, pods)
                try:
                    out[i][j] = self._planner.plan(member, pod_groups, value_queries)
                except Unplannable as skip:
                    out[i][j] = _failure(spec, str(skip))
        progress = _Progress(out, on_ready)
        finished = progress.finished
        jobs: list[Awaitable[None]] = []
        for group in pod_groups.values():
            jobs.extend(self._pod_group_jobs(group, at, deadline, out, finished))
        for query, members in value_queries.items():
            jobs.append(self._guard(self._run_value_query(query, members, at, deadline, out), members, out, finished))
        await asyncio.gather(*jobs)
        return [_complete(row) for row in out]

    def planned_queries(self, target: TargetQuery) -> list[PlannedQuery]:
        """The query text each metric of ``target`` is read with when it is the only target of a
        sync, in metric order (see :meth:`~autoscaler.prometheus.planning.QueryPlanner.planned_queries`)."""
        return self._planner.planned_queries(target)

    def _pod_group_jobs(
        self,
        group: PodGroup,
        at: float | None,
        deadline: float,
        out: Readings,
        finished: Callable[[Sequence[Member]], None],
    ) -> list[Awaitable[None]]:
        if group.fixed_scope is not None:
            chunks = [Chunk([group.members[0].target.namespace], group.members)]
        else:
            chunks = self._planner.chunks(group)
        return [
            self._guard(self._run_pod_chunk(group, chunk, at, deadline, out), chunk.members, out, finished)
            for chunk in chunks
        ]

    async def _guard(
        self,
        job: Awaitable[None],
        members: Sequence[Member],
        out: Readings,
        finished: Callable[[Sequence[Member]], None] | None = None,
    ) -> None:
        """Run a job; a bug in it fails its metrics rather than the whole sync. ``finished`` is told the
        job's members once they have their readings."""
        try:
            await job
        except Exception as exc:  # reported as the metrics' failure, and logged
            log.exception("reading metrics failed unexpectedly")
            for member in members:
                if out[member.target_index][member.metric_index] is None:
                    out[member.target_index][member.metric_index] = _failure(
                        member.spec, f"internal error while reading: {type(exc).__name__}: {exc}"
                    )
        if finished is not None:
            finished(members)

    async def _query(
        self, query: str, chunk: Chunk, at: float | None, deadline: float, out: Readings, sink: PodReadings | None
    ) -> InstantResult | None:
        """Run a per-pod query, its series read into ``sink`` if it can; on failure fail every member and
        return None."""
        members = chunk.members
        keep = pods_filter(members, self._names) if chunk.mostly_others() else None
        try:
            result = await self._sender.send(query, at, deadline=deadline, keep=keep, sink=sink)
        except StillRejected as still:
            _fail_all(members, still.message, out)
            return None
        except PrometheusError as error:
            _fail_all(members, failed_query_message(error, query), out, backend=is_backend_failure(error))
            return None
        if not self._whole(result, query, members, out):
            return None
        if result.result_type != "vector":
            _fail_all(
                members,
                f"the query returned a {result.result_type}; a per-pod metric needs an "
                f"instant vector with one series per pod (labels {self._names.namespace}, "
                f"{self._names.pod})",
                out,
            )
            return None
        return result

    def _whole(self, result: InstantResult, query: str, members: Sequence[Member], out: Readings) -> bool:
        """Whether ``result`` may be read: a partial answer fails every member (each target it serves);
        other warnings are logged, once per distinct text."""
        cause = partial_cause(result)
        if cause is not None:
            _fail_all(
                members,
                f"partial answer from {self._settings.display_url}: {cause}; a metric read "
                "from a partial answer cannot vote (no scale-down from it) until the answers are whole",
                out,
                backend=True,
            )
            return False
        for warning in other_warnings(result):
            if warning in self._warned:
                continue
            if len(self._warned) >= _WARNINGS_REMEMBERED:
                self._warned.clear()
            self._warned.add(warning)
            targets = sorted({f"{m.target.namespace}/{m.target.name}" for m in members})
            log.warning(
                "%s answered with a warning (logged once per text): %s; targets: %s; query: %s",
                self._settings.display_url,
                shorten(warning),
                ", ".join(targets[:10]) + (f" and {len(targets) - 10} more" if len(targets) > 10 else ""),
                shown_query(query),
            )
        return True

    async def _run_pod_chunk(
        self, group: PodGroup, chunk: Chunk, at: float | None, deadline: float, out: Readings
    ) -> None:
        members = chunk.members
        wanted = [(m.target.namespace, m.pods) for m in members]
        sink = PodReadings(
            wanted, self._names, group.window, per_container=group.per_container, nanocores=group.nanocores
        )
        result = await self._query(
            self._planner.query_text(group, chunk), chunk, at, deadline, out, sink if sink.usable else None
        )
        if result is None:
            return
        reference = self._times.evaluated_at(at)
        vector = result.vector
        fast: list[tuple[ResourceReading | PodsReading, int]] | None
        if result.sunk is not None:  # read as it was decoded, in the client's steps
            returned, fast = result.sunk, sink.readings()
        else:
            returned = len(vector) + result.left_out
            # A batched answer of 100,000 pods' series is ~100 ms of work: done in steps, with the loop's
            # turns between them (the inputs are this sync's own, nothing else touches them meanwhile).
            fast = await in_turns(
                readings_in_steps(
                    vector,
                    wanted,
                    self._names,
                    group.window,
                    per_container=group.per_container,
                    nanocores=group.nanocores,
                )
            )
        if fast is not None:
            for member, (found, matched) in zip(members, fast, strict=True):
                _put(out, member, self._timed(checked(found, member, returned, matched, self._names), reference))
            return
        buckets, ambiguous = split(vector, members, self._names)
        if ambiguous and len(chunk.namespaces) > 1 and SCOPE_SLOT in group.key_text:
            # Series without a namespace label whose pod names exist in several of the batched
            # namespaces: ask again one namespace at a time, and remember to do so next time.
            self._planner.ask_per_namespace(group)
            await asyncio.gather(
                *(self._run_pod_chunk(group, chunk.of_namespace(ns), at, deadline, out) for ns in chunk.namespaces)
            )
            return
        for index, member in enumerate(members):
            reading: MetricReading
            if index in ambiguous:
                reading = MetricFailure(
                    f'series without a "{self._names.namespace}" label name pods that exist in '
                    f"several namespaces; the query must keep the {self._names.namespace} label"
                )
            else:
                reading = self._timed(pod_reading(group, member, buckets[index], returned, self._names), reference)
            _put(out, member, reading)

    async def _run_value_query(
        self, query: str, members: list[Member], at: float | None, deadline: float, out: Readings
    ) -> None:
        owners = {(m.target.namespace, m.target.name) for m in members}
        share = next(iter(owners)) if len(owners) == 1 else None  # a query shared by targets is nobody's own
        try:
            result = await self._sender.send(query, at, deadline=deadline, share=share)
        except StillRejected as still:
            _fail_all(members, still.message, out)
            return
        except PrometheusError as error:
            _fail_all(members, failed_query_message(error, query), out, backend=is_backend_failure(error))
            return
        if not self._whole(result, query, members, out):
            return
        reference = self._times.evaluated_at(at)
        # An answer of 200,000 series is read in steps, with the loop's turns between, and its decoded series
        # freed so too (see autoscaler.prometheus.value_readings); once for all the targets that asked it.
        ordered = any(member.spec.type is MetricSourceType.EXTERNAL for member in members)
        # ignoreNullValues: an empty or NaN answer reads as 0 for the metrics that say so. Read once for all,
        # unless those that do and those that do not share the query and the answer is null for one of them.
        lenient = [member.spec.ignore_null_values for member in members]
        all_lenient = all(lenient)
        steps = values_in_steps(result, self._times, reference, ordered=ordered, nulls_as_zero=all_lenient)
        large = len(result.vector) > VALUES_STEP
        values = await in_turns(steps) if large else at_once(steps)
        as_zero = values
        if isinstance(values, MetricFailure) and not all_lenient and any(lenient):
            again = values_in_steps(result, self._times, reference, ordered=ordered, nulls_as_zero=True)
            as_zero = await in_turns(again) if large else at_once(again)
        for member, ignores_nulls in zip(members, lenient, strict=True):
            read = as_zero if ignores_nulls else values
            external = member.spec.type is MetricSourceType.EXTERNAL
            _put(out, member, external_reading(read) if external else object_reading(read))
        if large:
            await in_turns(emptied_in_steps(result.vector))

    def _timed(self, reading: MetricReading, reference: float) -> MetricReading:
        """A per-pod ``reading``, or its failure when a pod's sample is stamped out of bounds around the
        query's evaluation time ``reference`` (see :mod:`autoscaler.prometheus.sample_times`)."""
        if isinstance(reading, (PodsReading, ResourceReading)):
            failure = self._times.pods_failure(reading.pods, reference)
            if failure is not None:
                return failure
        return reading


def _put(out: Readings, member: Member, reading: MetricReading) -> None:
    """``member``'s reading; a failure names the metric."""
    out[member.target_index][member.metric_index] = (
        _failure(member.spec, reading.message, reading.backend) if isinstance(reading, MetricFailure) else reading
    )


def _complete(row: list[MetricReading | None]) -> list[MetricReading]:
    return [r if r is not None else MetricFailure("internal error: metric was not read") for r in row]


class _Progress:
    """Which targets of a read have all their readings: each one's are handed to ``on_ready`` as its last
    job finishes (at once for a target with nothing to query).

    A class rather than closures inside :meth:`MetricsReader.read` (a compiled module's rule:
    docs/compiled-boundary.md)."""

    __slots__ = ("_on_ready", "_out", "_pending")

    def __init__(self, out: Readings, on_ready: OnReady | None) -> None:
        self._out = out
        self._on_ready = on_ready
        self._pending = [sum(r is None for r in row) for row in out]
        for index, count in enumerate(self._pending):
            if count == 0:
                self._deliver(index)

    def finished(self, members: Sequence[Member]) -> None:
        pending = self._pending
        for member in members:
            pending[member.target_index] -= 1
            if pending[member.target_index] == 0:
                self._deliver(member.target_index)

    def _deliver(self, index: int) -> None:
        if self._on_ready is not None:
            self._on_ready(index, _complete(self._out[index]))


def _failure(spec: MetricSpec, message: str, backend: bool = False) -> MetricFailure:
    return MetricFailure(f'{spec.type.value} metric "{spec.name}": {message}', backend)


def _fail_all(members: Sequence[Member], message: str, out: Readings, *, backend: bool = False) -> None:
    """Every member fails with ``message``; ``backend``: because the backend did (see MetricFailure)."""
    for member in members:
        out[member.target_index][member.metric_index] = _failure(member.spec, message, backend)
