"""Planning one sync's reads: which metrics share a per-pod query, and the namespace chunks it is sent in.

With ``batch=True`` (the default), per-pod metrics whose queries render alike for every target (the
built-in CPU and memory queries, and any ``Pods`` query written with ``<<scope>>``) form one group,
whose query is scoped to all the group's namespaces (``namespace=~"a|b|…"``). A namespace list that
would make the query longer than ``maxQueryLength`` is cut into chunks, one query each: label
aggregation instead of prometheus-adapter's giant ``pod=~"a|b|…"`` regexes, which broke at 25 kB.
Object and External metrics are one query per target; identical rendered queries are sent once.

Apart from the reader (:mod:`autoscaler.prometheus.reader`) because this decides what is sent, not how
it is sent or what the answers mean; ``autoscaler backtest`` asks it which query each metric of a
target would be read with (:meth:`QueryPlanner.planned_queries`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autoscaler.core.observation import DEFAULT_SAMPLE_WINDOW, MetricReading, PodsReading, ResourceReading
from autoscaler.core.spec import MetricSourceType, MetricSpec
from autoscaler.prometheus.extract import LabelNames
from autoscaler.prometheus.promql import regex_escape, string_literal
from autoscaler.prometheus.queries import QueryBuilder, TargetQuery, Unplannable
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.prometheus.templates import SCOPE_SLOT


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    """The query one metric of a target is read with: ``text`` (None when the metric cannot be
    planned; ``problem`` says why) and whether it is a per-pod metric's query."""

    text: str | None
    per_pod: bool
    problem: str | None = None


@dataclass(eq=False)
class Member:
    """One (target, metric) pair waiting for a reading."""

    target_index: int
    metric_index: int
    target: TargetQuery
    spec: MetricSpec
    pods: frozenset[str]


@dataclass(eq=False)
class PodGroup:
    """Per-pod metrics whose queries render alike: one query per namespace chunk."""

    key_text: str
    per_container: bool
    window: float
    members: list[Member] = field(default_factory=list)
    # CPU usage: values are truncated to whole nanocores, as metrics-server reports them.
    nanocores: bool = False
    # Unbatched mode: the one target's own scope (namespace and pod names).
    fixed_scope: str | None = None


# Per-pod metrics by the group they share a query with, and the other metrics by their query text.
PodGroups = dict[tuple[object, ...], PodGroup]
ValueQueries = dict[str, list[Member]]


class QueryPlanner:
    def __init__(self, settings: PrometheusSettings, names: LabelNames, *, batch: bool) -> None:
        self._settings = settings
        self._names = names
        self._batch = batch
        self._queries = QueryBuilder(settings, names)
        # Batch keys whose results lack the namespace label where pod names collide across
        # namespaces: such queries are sent per namespace from then on.
        self._per_namespace_keys: set[str] = set()

    def plan(self, member: Member, pod_groups: PodGroups, value_queries: ValueQueries) -> MetricReading | None:
        """Add ``member`` to the group or query it is read with; or, when there is nothing to measure,
        return its reading at once. Raises :class:`Unplannable` when the metric cannot be read."""
        spec = member.spec
        template = self._queries.template_for(spec)
        if not spec.is_pod_metric:
            scope = self._queries.namespace_scope([member.target.namespace])
            query = self._queries.render(template, member.target, spec, scope=scope)
            value_queries.setdefault(query, []).append(member)
            return None
        per_container = spec.type in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE)
        window = self._settings.cpu_rate_window if per_container and spec.name == "cpu" else DEFAULT_SAMPLE_WINDOW
        if not member.pods:
            # Nothing to measure: no query at all.
            return ResourceReading(pods={}) if per_container else PodsReading(pods={})
        key_text = self._queries.render(template, member.target, spec, scope=SCOPE_SLOT)
        nanocores = per_container and spec.name == "cpu"
        key: tuple[object, ...] = (per_container, window, nanocores, key_text)
        fixed_scope = None
        if not self._batch:
            key += (member.target_index,)
            fixed_scope = self._queries.target_scope(member.target)
        group = pod_groups.get(key)
        if group is None:
            group = pod_groups[key] = PodGroup(
                key_text, per_container, window, fixed_scope=fixed_scope, nanocores=nanocores
            )
        group.members.append(member)
        return None

    def planned_queries(self, target: TargetQuery) -> list[PlannedQuery]:
        """The query text each metric of ``target`` is read with when it is the only target of a
        sync, in metric order. For tools that fetch the same data over a time range (``autoscaler
        backtest``); a text that uses ``<<pods>>`` (or ``batch=False``) depends on ``pod_names``."""
        planned: list[PlannedQuery] = []
        queries = self._queries
        for spec in target.metrics:
            try:
                template = queries.template_for(spec)
                if not spec.is_pod_metric:
                    scope = queries.namespace_scope([target.namespace])
                    planned.append(PlannedQuery(queries.render(template, target, spec, scope=scope), per_pod=False))
                    continue
                scope = queries.target_scope(target) if not self._batch else queries.namespace_scope([target.namespace])
                key_text = queries.render(template, target, spec, scope=SCOPE_SLOT)
                planned.append(PlannedQuery(key_text.replace(SCOPE_SLOT, scope), per_pod=True))
            except Unplannable as skip:
                planned.append(PlannedQuery(None, per_pod=spec.is_pod_metric, problem=str(skip)))
        return planned

    def query_text(self, group: PodGroup, namespaces: list[str]) -> str:
        """The query ``group`` sends for the pods of ``namespaces`` (one of its chunks)."""
        scope = group.fixed_scope or self._queries.namespace_scope(namespaces)
        return group.key_text.replace(SCOPE_SLOT, scope)

    def ask_per_namespace(self, group: PodGroup) -> None:
        """From now on, send ``group``'s query one namespace at a time (its answers cannot be told apart
        by namespace)."""
        self._per_namespace_keys.add(group.key_text)

    def namespace_chunks(self, group: PodGroup) -> list[list[str]]:
        """The group's namespaces, cut so that no query is longer than ``maxQueryLength``."""
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
