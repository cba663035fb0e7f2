"""Planning one sync's reads: which metrics share a per-pod query, and the namespace chunks it is sent in.

With ``batch=True`` (the default), per-pod metrics whose queries render alike for every target (the
built-in CPU and memory queries, and any ``Pods`` query written with ``<<scope>>``) form one group,
whose query is scoped to all the group's namespaces (``namespace=~"a|b|…"``). A namespace list that
would make the query longer than ``maxQueryLength`` is cut into chunks, one query each: label
aggregation instead of prometheus-adapter's giant ``pod=~"a|b|…"`` regexes, which broke at 25 kB.

A namespace answered whole carries every pod's series, the batch's targets' or not. Where its members
read a small part of the pods the service knows there (a few targets in a large shared namespace, a
label shard holding a small part of one), the chunk names their pods instead (``namespace="a",
pod=~"web-1|…"``, which Prometheus looks up in its index pod by pod), packed within the same
``maxQueryLength``: when the queries naming them cost less than decoding the other pods' series would
(:data:`SERIES_PER_QUERY`).

Object and External metrics are one query per target; identical rendered queries are sent once.

Apart from the reader (:mod:`autoscaler.prometheus.reader`) because this decides what is sent, not how
it is sent or what the answers mean; ``autoscaler backtest`` asks it which query each metric of a
target would be read with (:meth:`QueryPlanner.planned_queries`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

from autoscaler.core.observation import DEFAULT_SAMPLE_WINDOW, MetricReading, PodsReading, ResourceReading
from autoscaler.core.spec import RESOURCE_METRIC_TYPES, MetricSpec
from autoscaler.prometheus.extract import LabelNames
from autoscaler.prometheus.promql import regex_escape, string_literal
from autoscaler.prometheus.queries import QueryBuilder, TargetQuery, Unplannable
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.prometheus.templates import SCOPE_SLOT

# What one more query costs the service, in series of an answer decoded: ~1.2 ms against ~1.3 µs a series
# (a real Prometheus, 10,000 series of 5 namespaces asked whole or half of them named in 8 KiB queries).
SERIES_PER_QUERY = 1000


@dataclass(slots=True, init=False, unsafe_hash=True)
class PlannedQuery:
    """The query one metric of a target is read with: ``text`` (None when the metric cannot be
    planned; ``problem`` says why) and whether it is a per-pod metric's query."""

    text: Final[str | None]
    per_pod: Final[bool]
    problem: Final[str | None]

    def __init__(self, text: str | None, per_pod: bool, problem: str | None = None) -> None:
        self.text = text
        self.per_pod = per_pod
        self.problem = problem


@dataclass(eq=False, slots=True, init=False)
class Member:
    """One (target, metric) pair waiting for a reading."""

    target_index: int
    metric_index: int
    target: TargetQuery
    spec: MetricSpec
    pods: frozenset[str]

    def __init__(
        self, target_index: int, metric_index: int, target: TargetQuery, spec: MetricSpec, pods: frozenset[str]
    ) -> None:
        self.target_index = target_index
        self.metric_index = metric_index
        self.target = target
        self.spec = spec
        self.pods = pods


@dataclass(eq=False, slots=True)
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
        per_container = spec.type in RESOURCE_METRIC_TYPES
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
                key_text=key_text,
                per_container=per_container,
                window=window,
                fixed_scope=fixed_scope,
                nanocores=nanocores,
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

    def query_text(self, group: PodGroup, chunk: Chunk) -> str:
        """The query ``group`` sends for ``chunk``."""
        if group.fixed_scope is not None:
            scope = group.fixed_scope
        elif chunk.pods is not None:
            scope = self._queries.pods_scope(chunk.namespaces, chunk.pods)
        else:
            scope = self._queries.namespace_scope(chunk.namespaces)
        return group.key_text.replace(SCOPE_SLOT, scope)

    def ask_per_namespace(self, group: PodGroup) -> None:
        """From now on, send ``group``'s query one namespace at a time (its answers cannot be told apart
        by namespace)."""
        self._per_namespace_keys.add(group.key_text)

    def chunks(self, group: PodGroup) -> list[Chunk]:
        """The queries ``group`` is sent in, none longer than ``maxQueryLength``: its namespaces whole,
        except those where its members read only a small part of the pods the service knows there
        (:func:`_narrow`), whose members' own pods are named instead."""
        by_namespace: dict[str, list[Member]] = {}
        for member in group.members:
            by_namespace.setdefault(member.target.namespace, []).append(member)
        namespaces = sorted(by_namespace)
        slots = group.key_text.count(SCOPE_SLOT)
        if slots == 0:
            return [Chunk(namespaces, group.members)]  # the query does not depend on the scope: send it once
        limit = self._settings.max_query_length
        one_by_one = group.key_text in self._per_namespace_keys
        # ``namespace=~""`` in place of each slot; a pod scope adds ``, pod=~""`` to it.
        whole = len(group.key_text) + slots * (len(self._names.namespace) + 4 - len(SCOPE_SLOT))
        named = whole + slots * (len(self._names.pod) + 6)
        wide: list[str] = []
        narrow: list[Member] = []
        for namespace in namespaces:
            members = by_namespace[namespace]
            if _narrow(members, limit - named, slots):
                narrow.extend(members)
            else:
                wide.append(namespace)
        chunks: list[Chunk] = []
        for part in _packed(wide, lambda ns: slots * _alternative(ns), limit - whole, one_by_one=one_by_one):
            chunks.append(Chunk(part, [m for ns in part for m in by_namespace[ns]]))
        chunks.extend(_named_chunks(narrow, slots, limit - named, one_by_one=one_by_one))
        return chunks


@dataclass(eq=False, slots=True)
class Chunk:
    """One query of a pod group: the namespaces it covers, the members it answers, and the pods it names
    (None: every pod of the namespaces)."""

    namespaces: list[str]
    members: list[Member]
    pods: set[str] | None = None

    def mostly_others(self) -> bool:
        """Whether a good part of this chunk's answer may be pods its members do not read (more than a
        quarter of the pods the service knows in its namespaces, or pods it does not know at all): a large
        answer is then left without them as it is decoded. A call of the filter per series was a twentieth
        of the service's CPU at 10,000 targets, where every namespace's pods are read."""
        if self.pods is not None:
            return False  # its pods are named: the answer holds those
        known: dict[str, int] = {}
        wanted = 0
        for member in self.members:
            known[member.target.namespace] = max(known.get(member.target.namespace, 0), member.target.namespace_pods)
            wanted += len(member.pods)
        return 4 * wanted < 3 * sum(known.values()) or not all(known.values())

    def of_namespace(self, namespace: str) -> Chunk:
        """The part of this chunk that is ``namespace``'s (asked again alone)."""
        members = [m for m in self.members if m.target.namespace == namespace]
        pods = None if self.pods is None else {p for m in members for p in m.pods}
        return Chunk([namespace], members, pods)


@lru_cache(maxsize=1 << 16)
def _alternative(value: str) -> int:
    """What ``value`` adds to an alternation in a query: itself escaped, and a separator (remembered:
    a namespace's pod names are weighed at every one of its ticks)."""
    return len(string_literal(regex_escape(value))) - 1


def _narrow(members: list[Member], room: int, slots: int) -> bool:
    """Whether a namespace's members are read by naming their pods: when the queries that takes cost less
    than decoding the series of the namespace's other pods a whole answer would carry (a shard holding a
    small part of a namespace, a few targets in a large shared one), and each member's pods fit in one
    query (``room``: what a query has for names)."""
    known = max(m.target.namespace_pods for m in members)
    wanted: set[str] = set().union(*(m.pods for m in members))
    if known <= len(wanted):
        return False
    names = slots * sum(map(_alternative, wanted))
    if names * SERIES_PER_QUERY > (known - len(wanted)) * room:
        return False
    namespace = _alternative(members[0].target.namespace)
    return all(slots * (namespace + sum(map(_alternative, m.pods))) <= room for m in members)


def _packed(namespaces: list[str], cost: Callable[[str], int], room: int, *, one_by_one: bool) -> list[list[str]]:
    """``namespaces`` cut into parts whose alternations fit in ``room`` (each alone when ``one_by_one``)."""
    if one_by_one:
        return [[ns] for ns in namespaces]
    parts: list[list[str]] = []
    current: list[str] = []
    size = 0
    for namespace in namespaces:
        piece = cost(namespace)
        if current and size + piece > room:
            parts.append(current)
            current, size = [], 0
        current.append(namespace)
        size += piece
    if current:
        parts.append(current)
    return parts


def _named_chunks(members: list[Member], slots: int, room: int, *, one_by_one: bool) -> list[Chunk]:
    """Chunks naming ``members``' pods (members in namespace order), a member never split over two, each
    chunk's namespaces and pods fitting in ``room`` (one namespace each when ``one_by_one``)."""
    chunks: list[Chunk] = []
    size = 0
    for member in members:
        current = chunks[-1] if chunks else None
        if current is not None and not (one_by_one and member.target.namespace != current.namespaces[-1]):
            piece = _named_cost(current, member, slots)
            if size + piece <= room:
                _add_named(current, member)
                size += piece
                continue
        current = Chunk([], [], set())
        size = _named_cost(current, member, slots)
        _add_named(current, member)
        chunks.append(current)
    return chunks


def _named_cost(chunk: Chunk, member: Member, slots: int) -> int:
    """What naming ``member``'s pods in ``chunk`` adds to its query."""
    named = chunk.pods or set()
    namespace = member.target.namespace
    pods = sum(_alternative(pod) for pod in member.pods if pod not in named)
    return slots * (pods + (0 if chunk.namespaces and chunk.namespaces[-1] == namespace else _alternative(namespace)))


def _add_named(chunk: Chunk, member: Member) -> None:
    chunk.members.append(member)
    if chunk.pods is not None:
        chunk.pods |= member.pods
    if not chunk.namespaces or chunk.namespaces[-1] != member.target.namespace:
        chunk.namespaces.append(member.target.namespace)
