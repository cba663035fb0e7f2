"""Turn targets' metric specs into readings: plan the queries, batch them, run them, split results.

Per sync, a metric costs at most one query per target; with ``batch=True`` (the default) targets
whose query templates render alike (the built-in CPU and memory queries, and any ``Pods`` query
written with ``<<scope>>``) share one query scoped to all their namespaces
(``namespace=~"a|b|…"``), grouped by namespace and pod, and the result is split back per target.
A namespace list longer than ``max_query_length`` is split into several queries: label
aggregation instead of prometheus-adapter's giant ``pod=~"a|b|…"`` regexes, which broke at 25 kB.

What a reading holds for per-pod metrics: samples for the target's own pods (``pod_names``) only.
The batched (namespace-wide) result also holds other workloads' pods; those are dropped, and so is
any series whose pod is not in the list (we cannot tell another workload's pod from a pod the
cluster has not reported yet; the pod list from the cluster is the authority). Object and External
metrics are one query per target (identical rendered queries are sent once per sync).

:meth:`MetricsReader.read` never raises for a metric's failure: each failed metric gets a
:class:`~autoscaler.core.observation.MetricFailure` saying why, which the engine treats as "this
metric cannot vote for a scale-down".

Isolation, so that one target's trouble stays its own:

* a target's readings are handed over (``on_ready``) as soon as its own queries are done, not when the
  slowest query of the batch is: a slow External query costs only the targets that read it;
* a target's own queries (Object/External) take at most ``targetConcurrency`` of the client's slots at
  once, and waiting for one counts against the query's deadline;
* a query Prometheus rejects as invalid (HTTP 400/422) is not sent again until a slow, jittered backoff
  has passed (``invalidQueryBackoffSeconds``, doubling up to ``invalidQueryBackoffMaxSeconds``); until
  then its metrics fail at once with Prometheus' text.

A partial answer (a Thanos warning naming a store that did not answer, a VictoriaMetrics cluster's
``isPartial``; see :mod:`autoscaler.prometheus.partial`) fails every metric read from it, for every target a
batched query serves, with "partial answer from <url>: <the backend's words>": less data must never read
as less load. Other warnings are logged once per distinct text, with the targets that read the answer.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from autoscaler.core.observation import (
    DEFAULT_SAMPLE_WINDOW,
    MetricFailure,
    MetricReading,
    PodsReading,
    ResourceReading,
)
from autoscaler.core.spec import CrossVersionObjectReference, MetricSourceType, MetricSpec
from autoscaler.prometheus.errors import PrometheusBadQuery, PrometheusError, PrometheusTimeout
from autoscaler.prometheus.extract import (
    LabelNames,
    external_reading,
    no_value_failure,
    object_reading,
    pods_reading,
    readings_in_one_pass,
    resource_reading,
)
from autoscaler.prometheus.partial import other_warnings, partial_cause, shorten
from autoscaler.prometheus.promql import (
    SelectorError,
    regex_escape,
    regex_literal,
    selector_matchers,
    string_literal,
)
from autoscaler.prometheus.results import InstantResult, Series, SeriesFilter
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.prometheus.templates import (
    CPU_TEMPLATE,
    MEMORY_TEMPLATE,
    SCOPE_SLOT,
    QueryTemplate,
    TemplateError,
)

log = logging.getLogger(__name__)

_QUERY_IN_MESSAGE_LIMIT = 300
_WARNINGS_REMEMBERED = 1000  # distinct warning texts already logged (forgotten all at once past this)
# Placeholders whose values do not depend on the target or metric: a template using only these renders
# to the same text for every target.
_SHARED_PLACEHOLDERS = frozenset({"scope", "window", "pod_label", "namespace_label", "container_label"})


class InstantQuerier(Protocol):
    """What the reader needs from a client: :class:`PrometheusClient`, or a stand-in that answers
    from data fetched beforehand (``autoscaler backtest`` answers from range queries)."""

    async def query(
        self, promql: str, at: float | None, *, deadline: float | None = None, keep: SeriesFilter | None = None
    ) -> InstantResult: ...


# Told each target's readings (its index in the read's list) as soon as all its metrics have one.
OnReady = Callable[[int, list[MetricReading]], None]


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    """The query one metric of a target is read with: ``text`` (None when the metric cannot be
    planned; ``problem`` says why) and whether it is a per-pod metric's query."""

    text: str | None
    per_pod: bool
    problem: str | None = None


@dataclass(frozen=True)
class TargetQuery:
    """One target's needs for one sync."""

    namespace: str
    name: str
    scale_target: CrossVersionObjectReference
    selector: str
    pod_names: Sequence[str]
    metrics: Sequence[MetricSpec]


@dataclass(eq=False)
class _Member:
    """One (target, metric) pair waiting for a reading."""

    target_index: int
    metric_index: int
    target: TargetQuery
    spec: MetricSpec
    pods: frozenset[str]


@dataclass(eq=False)
class _PodGroup:
    """Per-pod metrics whose queries render alike: one query per namespace chunk."""

    key_text: str
    per_container: bool
    window: float
    members: list[_Member] = field(default_factory=list)
    # CPU usage: values are truncated to whole nanocores, as metrics-server reports them.
    nanocores: bool = False
    # Unbatched mode: the one target's own scope (namespace and pod names).
    fixed_scope: str | None = None


class _Skip(Exception):
    """The metric cannot be planned; the message is its failure."""


@dataclass
class _Rejected:
    """A query Prometheus rejected as invalid, and when it may be sent again (event-loop time)."""

    message: str
    retry_at: float
    failures: int


class _TargetShares:
    """Each target's share of the client's query slots (``targetConcurrency``), made on first use and
    dropped when the target has nothing in flight."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._shares: dict[tuple[str, str], tuple[asyncio.Semaphore, list[int]]] = {}

    async def acquire(self, key: tuple[str, str], deadline: float) -> None:
        semaphore, users = self._shares.setdefault(key, (asyncio.Semaphore(self._size), [0]))
        users[0] += 1
        try:
            async with asyncio.timeout_at(deadline):
                await semaphore.acquire()
        except BaseException:
            self._leave(key, users)
            raise

    def release(self, key: tuple[str, str]) -> None:
        semaphore, users = self._shares[key]
        semaphore.release()
        self._leave(key, users)

    def _leave(self, key: tuple[str, str], users: list[int]) -> None:
        users[0] -= 1
        if users[0] == 0:
            del self._shares[key]


class MetricsReader:
    def __init__(
        self,
        client: InstantQuerier,
        settings: PrometheusSettings,
        *,
        batch: bool = True,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._client = client
        self._settings = settings
        self._batch = batch
        self._rng = rng
        self._shares = _TargetShares(settings.per_target_concurrency)
        self._rejected: dict[str, _Rejected] = {}  # by query text (see _send)
        self._names = LabelNames(
            pod=settings.pod_label, container=settings.container_label, namespace=settings.namespace_label
        )
        self._templates: dict[str, QueryTemplate | TemplateError] = {}
        self._rendered: dict[tuple[str, str], str] = {}  # see _render
        # Batch keys whose results lack the namespace label where pod names collide across
        # namespaces: such queries are sent per namespace from then on.
        self._per_namespace_keys: set[str] = set()
        self._warned: set[str] = set()  # warning texts already logged

    async def read(
        self, targets: Sequence[TargetQuery], at: float | None, on_ready: OnReady | None = None
    ) -> list[list[MetricReading]]:
        """``result[i][j]`` is the reading or failure of ``targets[i].metrics[j]`` at Unix time ``at``
        (None: now, by Prometheus' clock). ``on_ready(i, row)`` is called for each target as soon as
        all its metrics have their reading, before slower targets' queries are done."""
        out: list[list[MetricReading | None]] = [[None] * len(t.metrics) for t in targets]
        pod_groups: dict[tuple[object, ...], _PodGroup] = {}
        value_queries: dict[str, list[_Member]] = {}
        for i, target in enumerate(targets):
            pods = frozenset(target.pod_names)
            for j, spec in enumerate(target.metrics):
                member = _Member(i, j, target, spec, pods)
                try:
                    self._plan(member, pod_groups, value_queries, out)
                except _Skip as skip:
                    out[i][j] = _failure(spec, str(skip))
        pending = [sum(r is None for r in row) for row in out]

        def deliver(index: int) -> None:
            if on_ready is not None:
                on_ready(index, _complete(out[index]))

        def finished(members: Sequence[_Member]) -> None:
            for member in members:
                pending[member.target_index] -= 1
                if pending[member.target_index] == 0:
                    deliver(member.target_index)

        for index, count in enumerate(pending):
            if count == 0:
                deliver(index)
        deadline = asyncio.get_running_loop().time() + self._settings.timeout_seconds
        jobs: list[Awaitable[None]] = []
        for group in pod_groups.values():
            jobs.extend(self._pod_group_jobs(group, at, out, finished))
        for query, members in value_queries.items():
            jobs.append(self._guard(self._run_value_query(query, members, at, deadline, out), members, out, finished))
        await asyncio.gather(*jobs)
        return [_complete(row) for row in out]

    def planned_queries(self, target: TargetQuery) -> list[PlannedQuery]:
        """The query text each metric of ``target`` is read with when it is the only target of a
        sync, in metric order. For tools that fetch the same data over a time range (``autoscaler
        backtest``); a text that uses ``<<pods>>`` (or ``batch=False``) depends on ``pod_names``."""
        planned: list[PlannedQuery] = []
        for j, spec in enumerate(target.metrics):
            member = _Member(0, j, target, spec, frozenset(target.pod_names))
            try:
                template = self._template(self._template_text(spec))
                if not spec.is_pod_metric:
                    scope = self._namespace_scope([target.namespace])
                    planned.append(PlannedQuery(self._render(template, member, scope=scope), per_pod=False))
                    continue
                scope = self._target_scope(target) if not self._batch else self._namespace_scope([target.namespace])
                key_text = self._render(template, member, scope=SCOPE_SLOT)
                planned.append(PlannedQuery(key_text.replace(SCOPE_SLOT, scope), per_pod=True))
            except _Skip as skip:
                planned.append(PlannedQuery(None, per_pod=spec.is_pod_metric, problem=str(skip)))
        return planned

    # -- planning -------------------------------------------------------------------------------

    def _plan(
        self,
        member: _Member,
        pod_groups: dict[tuple[object, ...], _PodGroup],
        value_queries: dict[str, list[_Member]],
        out: list[list[MetricReading | None]],
    ) -> None:
        spec = member.spec
        template = self._template(self._template_text(spec))
        if not spec.is_pod_metric:
            query = self._render(template, member, scope=self._namespace_scope([member.target.namespace]))
            value_queries.setdefault(query, []).append(member)
            return
        per_container = spec.type in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE)
        window = self._settings.cpu_rate_window if per_container and spec.name == "cpu" else DEFAULT_SAMPLE_WINDOW
        if not member.pods:
            # Nothing to measure: no query at all.
            out[member.target_index][member.metric_index] = (
                ResourceReading(pods={}) if per_container else PodsReading(pods={})
            )
            return
        key_text = self._render(template, member, scope=SCOPE_SLOT)
        nanocores = per_container and spec.name == "cpu"
        key: tuple[object, ...] = (per_container, window, nanocores, key_text)
        fixed_scope = None
        if not self._batch:
            key += (member.target_index,)
            fixed_scope = self._target_scope(member.target)
        group = pod_groups.get(key)
        if group is None:
            group = pod_groups[key] = _PodGroup(
                key_text, per_container, window, fixed_scope=fixed_scope, nanocores=nanocores
            )
        group.members.append(member)

    def _template_text(self, spec: MetricSpec) -> str:
        if spec.query:
            return spec.query
        if spec.type in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE):
            if spec.name == "cpu":
                return self._settings.cpu_query or CPU_TEMPLATE
            if spec.name == "memory":
                return self._settings.memory_query or MEMORY_TEMPLATE
            raise _Skip(f"there is no built-in query for resource {spec.name!r}; set the metric's query")
        raise _Skip("the metric has no query")

    def _template(self, text: str) -> QueryTemplate:
        cached = self._templates.get(text)
        if cached is None:
            try:
                cached = QueryTemplate.parse(text)
            except TemplateError as exc:
                cached = exc
            self._templates[text] = cached
        if isinstance(cached, TemplateError):
            raise _Skip(f"invalid query template: {cached}")
        return cached

    def _render(self, template: QueryTemplate, member: _Member, *, scope: str) -> str:
        if template.placeholders <= _SHARED_PLACEHOLDERS:
            # The same text for every target (the built-in queries, and most <<scope>> ones): rendered
            # once, not once per target and sync.
            key = (template.text, scope)
            rendered = self._rendered.get(key)
            if rendered is None:
                if len(self._rendered) > 1000:
                    self._rendered.clear()
                rendered = self._rendered[key] = self._render_for(template, member, scope=scope)
            return rendered
        return self._render_for(template, member, scope=scope)

    def _render_for(self, template: QueryTemplate, member: _Member, *, scope: str) -> str:
        target, spec, names = member.target, member.spec, self._names
        values: dict[str, str] = {}
        for name in template.placeholders:
            if name == "scope":
                values[name] = scope
            elif name == "namespace":
                values[name] = string_literal(target.namespace)
            elif name == "name":
                values[name] = string_literal(target.name)
            elif name == "target_kind":
                values[name] = string_literal(target.scale_target.kind)
            elif name == "target_name":
                values[name] = string_literal(target.scale_target.name)
            elif name == "selector":
                try:
                    values[name] = selector_matchers(target.selector)
                except SelectorError as exc:
                    raise _Skip(f"the query uses <<selector>>, but {exc}") from None
            elif name == "pods":
                values[name] = regex_literal(target.pod_names)
            elif name == "window":
                values[name] = self._settings.cpu_rate_window_text
            elif name == "container":
                values[name] = string_literal(spec.container or "")
            elif name in ("resource", "metric"):
                values[name] = string_literal(spec.name)
            elif name == "pod_label":
                values[name] = names.pod
            elif name == "namespace_label":
                values[name] = names.namespace
            elif name == "container_label":
                values[name] = names.container
        return template.render(values)

    def _namespace_scope(self, namespaces: Sequence[str]) -> str:
        label = self._names.namespace
        if len(namespaces) == 1:
            return f"{label}={string_literal(namespaces[0])}"
        return f"{label}=~{regex_literal(namespaces)}"

    def _target_scope(self, target: TargetQuery) -> str:
        return (
            f"{self._names.namespace}={string_literal(target.namespace)}, "
            f"{self._names.pod}=~{regex_literal(target.pod_names)}"
        )

    def _namespace_chunks(self, group: _PodGroup) -> list[list[str]]:
        namespaces = sorted({m.target.namespace for m in group.members})
        slots = group.key_text.count(SCOPE_SLOT)
        if slots == 0:
            return [namespaces]  # the query does not depend on the namespaces: send it once
        if group.key_text in self._per_namespace_keys:
            return [[ns] for ns in namespaces]
        base = len(group.key_text) + slots * (len(self._names.namespace) + 4 - len(SCOPE_SLOT))
        chunks: list[list[str]] = []
        current: list[str] = []
        size = base
        for namespace in namespaces:
            piece = slots * (len(string_literal(regex_escape(namespace))) - 1)
            if current and size + piece > self._settings.max_query_length:
                chunks.append(current)
                current, size = [], base
            current.append(namespace)
            size += piece
        chunks.append(current)
        return chunks

    # -- running --------------------------------------------------------------------------------

    def _pod_group_jobs(
        self,
        group: _PodGroup,
        at: float | None,
        out: list[list[MetricReading | None]],
        finished: Callable[[Sequence[_Member]], None],
    ) -> list[Awaitable[None]]:
        if group.fixed_scope is not None:
            return [
                self._guard(
                    self._run_pod_chunk(group, [group.members[0].target.namespace], group.members, at, out),
                    group.members,
                    out,
                    finished,
                )
            ]
        jobs: list[Awaitable[None]] = []
        for chunk in self._namespace_chunks(group):
            in_chunk = set(chunk)
            members = [m for m in group.members if m.target.namespace in in_chunk]
            jobs.append(self._guard(self._run_pod_chunk(group, chunk, members, at, out), members, out, finished))
        return jobs

    async def _guard(
        self,
        job: Awaitable[None],
        members: Sequence[_Member],
        out: list[list[MetricReading | None]],
        finished: Callable[[Sequence[_Member]], None] | None = None,
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

    async def _send(
        self,
        query: str,
        at: float | None,
        *,
        deadline: float | None = None,
        keep: SeriesFilter | None = None,
        share: tuple[str, str] | None = None,
    ) -> InstantResult:
        """Send one query, unless Prometheus rejected it as invalid and its backoff has not passed (then
        fail at once with the same message). ``share``: the one target the query is read for, whose
        share of the slots it must wait for (within ``deadline``)."""
        loop = asyncio.get_running_loop()
        rejected = self._rejected.get(query)
        if rejected is not None and loop.time() < rejected.retry_at:
            raise _StillRejected(rejected.message)
        if share is not None:
            assert deadline is not None
            try:
                await self._shares.acquire(share, deadline)
            except TimeoutError:
                raise PrometheusTimeout(
                    f"no query slot within {self._settings.timeout_seconds:g}s: this target's own queries "
                    f"may use {self._settings.per_target_concurrency} at once (prometheus.targetConcurrency), "
                    "and its other queries held them"
                ) from None
        try:
            result = await self._client.query(query, at, deadline=deadline, keep=keep)
        except PrometheusBadQuery as error:
            self._reject(query, _query_error_message(error, query), rejected)
            raise
        finally:
            if share is not None:
                self._shares.release(share)
        if rejected is not None:
            del self._rejected[query]
        return result

    def _reject(self, query: str, message: str, before: _Rejected | None) -> None:
        settings = self._settings
        failures = before.failures + 1 if before is not None else 1
        delay = min(
            settings.invalid_query_backoff_max_seconds, settings.invalid_query_backoff_seconds * 2 ** (failures - 1)
        )
        delay *= 0.75 + 0.25 * self._rng()  # jittered below the cap: many rejected queries do not align
        now = asyncio.get_running_loop().time()
        if len(self._rejected) > 10_000:  # queries no target reads any more: forget the expired ones
            self._rejected = {q: r for q, r in self._rejected.items() if r.retry_at > now}
        self._rejected[query] = _Rejected(message + _BACKOFF_NOTE, now + delay, failures)
        log.warning("Prometheus rejected a query as invalid; it is retried after %.0f s: %s", delay, message)

    async def _query(
        self, query: str, members: Sequence[_Member], at: float | None, out: list[list[MetricReading | None]]
    ) -> InstantResult | None:
        """Run a per-pod query; on failure fail every member and return None."""
        try:
            result = await self._send(query, at, keep=self._pods_filter(members))
        except _StillRejected as still:
            _fail_all(members, still.message, out)
            return None
        except PrometheusError as error:
            message = _query_error_message(error, query)
            _fail_all(members, message + (_BACKOFF_NOTE if isinstance(error, PrometheusBadQuery) else ""), out)
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

    def _whole(
        self, result: InstantResult, query: str, members: Sequence[_Member], out: list[list[MetricReading | None]]
    ) -> bool:
        """Whether ``result`` may be read: a partial answer fails every member (each target it serves);
        other warnings are logged, once per distinct text."""
        cause = partial_cause(result)
        if cause is not None:
            _fail_all(
                members,
                f"partial answer from {self._settings.display_url}: {cause}; a metric read "
                "from a partial answer cannot vote (no scale-down from it) until the answers are whole",
                out,
            )
            return False
        for warning in other_warnings(result):
            if warning in self._warned:
                continue
            if len(self._warned) >= _WARNINGS_REMEMBERED:
                self._warned.clear()
            self._warned.add(warning)
            targets = sorted({f"{m.target.namespace}/{m.target.name}" for m in members})
            shown = query if len(query) <= _QUERY_IN_MESSAGE_LIMIT else query[:_QUERY_IN_MESSAGE_LIMIT] + "…"
            log.warning(
                "%s answered with a warning (logged once per text): %s; targets: %s; query: %s",
                self._settings.display_url,
                shorten(warning),
                ", ".join(targets[:10]) + (f" and {len(targets) - 10} more" if len(targets) > 10 else ""),
                shown,
            )
        return True

    def _pods_filter(self, members: Sequence[_Member]) -> SeriesFilter:
        """The series a per-pod query's members can use: their pods' (a large answer is parsed without
        the others). A series without the namespace label is kept when its pod name is wanted anywhere.
        The sets are made on the filter's first use: a small answer never uses it."""
        wanted: dict[str, set[str]] = {}
        anywhere: set[str] = set()
        pod_label, namespace_label = self._names.pod, self._names.namespace

        def keep(labels: Mapping[str, str]) -> bool:
            if not anywhere:
                for member in members:
                    wanted.setdefault(member.target.namespace, set()).update(member.pods)
                    anywhere.update(member.pods)
            pod = labels.get(pod_label)
            if pod is None:
                return False
            namespace = labels.get(namespace_label)
            return pod in (anywhere if namespace is None else wanted.get(namespace, ()))

        return keep

    async def _run_pod_chunk(
        self,
        group: _PodGroup,
        namespaces: list[str],
        members: list[_Member],
        at: float | None,
        out: list[list[MetricReading | None]],
    ) -> None:
        scope = group.fixed_scope or self._namespace_scope(namespaces)
        result = await self._query(group.key_text.replace(SCOPE_SLOT, scope), members, at, out)
        if result is None:
            return
        vector = result.vector
        returned = len(vector) + result.left_out
        fast = readings_in_one_pass(
            vector,
            [(m.target.namespace, m.pods) for m in members],
            self._names,
            group.window,
            per_container=group.per_container,
            nanocores=group.nanocores,
        )
        if fast is not None:
            for member, (found, matched) in zip(members, fast, strict=True):
                checked = self._checked(found, member, returned, matched)
                out[member.target_index][member.metric_index] = (
                    _failure(member.spec, checked.message) if isinstance(checked, MetricFailure) else checked
                )
            return
        buckets, ambiguous = self._split(vector, members)
        if ambiguous and len(namespaces) > 1 and SCOPE_SLOT in group.key_text:
            # Series without a namespace label whose pod names exist in several of the batched
            # namespaces: ask again one namespace at a time, and remember to do so next time.
            self._per_namespace_keys.add(group.key_text)
            await asyncio.gather(
                *(
                    self._run_pod_chunk(group, [ns], [m for m in members if m.target.namespace == ns], at, out)
                    for ns in namespaces
                )
            )
            return
        for index, member in enumerate(members):
            if index in ambiguous:
                reading: MetricReading = MetricFailure(
                    f'series without a "{self._names.namespace}" label name pods that exist in '
                    f"several namespaces; the query must keep the {self._names.namespace} label"
                )
            else:
                reading = self._pod_reading(group, member, buckets[index], returned)
            out[member.target_index][member.metric_index] = (
                _failure(member.spec, reading.message) if isinstance(reading, MetricFailure) else reading
            )

    def _split(self, vector: Sequence[Series], members: Sequence[_Member]) -> tuple[list[list[Series]], set[int]]:
        """Each member's series, by (namespace, pod); and members hit by ambiguous series.

        The hot loop of a batched sync: one dict lookup per series. A (namespace, pod) usually
        belongs to one member; the few shared by several (overlapping selectors, or the same pod
        read by two metrics with one query) are kept aside in ``shared``.
        """
        names = self._names
        owner: dict[tuple[str, str], int] = {}
        shared: dict[tuple[str, str], list[int]] = {}
        for index, member in enumerate(members):
            namespace = member.target.namespace
            for pod in member.pods:
                key = (namespace, pod)
                first = owner.setdefault(key, index)
                if first != index:
                    shared.setdefault(key, [first]).append(index)
        by_pod: dict[str, list[int]] | None = None
        buckets: list[list[Series]] = [[] for _ in members]
        ambiguous: set[int] = set()
        pod_label, namespace_label = names.pod, names.namespace
        for series in vector:
            labels = series.labels
            series_pod = labels.get(pod_label)
            if series_pod is None:
                continue
            series_namespace = labels.get(namespace_label)
            if series_namespace is not None:
                key = (series_namespace, series_pod)
                hit = owner.get(key)
                if hit is None:
                    continue
                if shared and key in shared:
                    for index in shared[key]:
                        buckets[index].append(series)
                else:
                    buckets[hit].append(series)
                continue
            if by_pod is None:
                by_pod = {}
                for (_, pod_name), index in owner.items():
                    by_pod.setdefault(pod_name, []).append(index)
                for (_, pod_name), indexes in shared.items():
                    by_pod[pod_name].extend(i for i in indexes if i not in by_pod[pod_name])
            hits = by_pod.get(series_pod)
            if not hits:
                continue
            if len({members[i].target.namespace for i in hits}) > 1:
                ambiguous.update(hits)
                continue
            for index in hits:
                buckets[index].append(series)
        return buckets, ambiguous

    def _pod_reading(self, group: _PodGroup, member: _Member, series: list[Series], returned: int) -> MetricReading:
        reading: MetricReading
        if group.per_container:
            reading = resource_reading(series, self._names, group.window, nanocores=group.nanocores)
        else:
            reading = pods_reading(series, self._names, group.window)
        return self._checked(reading, member, returned, len(series))

    def _checked(self, reading: MetricReading, member: _Member, returned: int, matched: int) -> MetricReading:
        """A reading without a single usable pod fails, saying why."""
        if isinstance(reading, PodsReading) and not reading.pods and member.pods:
            return no_value_failure(len(member.pods), returned, matched, self._names)
        if isinstance(reading, ResourceReading) and not reading.pods and member.pods:
            return no_value_failure(len(member.pods), returned, 0, self._names)
        return reading

    async def _run_value_query(
        self,
        query: str,
        members: list[_Member],
        at: float | None,
        deadline: float,
        out: list[list[MetricReading | None]],
    ) -> None:
        owners = {(m.target.namespace, m.target.name) for m in members}
        share = next(iter(owners)) if len(owners) == 1 else None  # a query shared by targets is nobody's own
        try:
            result = await self._send(query, at, deadline=deadline, share=share)
        except _StillRejected as still:
            _fail_all(members, still.message, out)
            return
        except PrometheusError as error:
            message = _query_error_message(error, query)
            _fail_all(members, message + (_BACKOFF_NOTE if isinstance(error, PrometheusBadQuery) else ""), out)
            return
        if not self._whole(result, query, members, out):
            return
        for member in members:
            external = member.spec.type is MetricSourceType.EXTERNAL
            reading: MetricReading = external_reading(result) if external else object_reading(result)
            out[member.target_index][member.metric_index] = (
                _failure(member.spec, reading.message) if isinstance(reading, MetricFailure) else reading
            )


_BACKOFF_NOTE = "; the query is invalid: it is sent again only after a slow backoff"


class _StillRejected(Exception):
    """The query was rejected as invalid and its backoff has not passed."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _complete(row: list[MetricReading | None]) -> list[MetricReading]:
    return [r if r is not None else MetricFailure("internal error: metric was not read") for r in row]


def _failure(spec: MetricSpec, message: str) -> MetricFailure:
    return MetricFailure(f'{spec.type.value} metric "{spec.name}": {message}')


def _fail_all(members: Sequence[_Member], message: str, out: list[list[MetricReading | None]]) -> None:
    for member in members:
        out[member.target_index][member.metric_index] = _failure(member.spec, message)


def _query_error_message(error: PrometheusError, query: str) -> str:
    message = f"querying Prometheus failed: {error}"
    if isinstance(error, PrometheusBadQuery):
        shown = query if len(query) <= _QUERY_IN_MESSAGE_LIMIT else query[:_QUERY_IN_MESSAGE_LIMIT] + "…"
        message += f"; query: {shown}"
    return message
