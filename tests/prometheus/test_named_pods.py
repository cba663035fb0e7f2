"""Batched per-pod queries that name the batch's pods where it reads only a small part of a namespace
(a label shard holding part of a namespace, a few targets in a large shared one), against a fake client."""

from __future__ import annotations

import re
from typing import cast

from autoscaler.core.observation import PodsReading
from autoscaler.prometheus import MetricsReader, PrometheusClient, PrometheusSettings, TargetQuery
from autoscaler.prometheus.results import InstantResult
from tests.prometheus import scenario as sc
from tests.prometheus.test_reader import AT, make_reader, namespaces_in, series, vector

RPS = sc.pods_metric(sc.rps_query("m"))


def target(namespace: str, name: str, pods: tuple[str, ...], known: int, metric: object = RPS) -> TargetQuery:
    return TargetQuery(namespace, name, sc.ref(name), f"app={name}", pods, (metric,), namespace_pods=known)  # type: ignore[arg-type]


def pods_in(query: str) -> set[str] | None:
    """The pod names a query's scope lists (unescaped), None when it asks for whole namespaces."""
    match = re.search(r'pod=~"([^"]*)"', query)
    return None if match is None else {p.replace("\\\\", "") for p in match.group(1).split("|")}


def every_pod_of(namespaces: dict[str, list[str]]) -> InstantResult:
    """What Prometheus answers to a scope of whole namespaces: each pod of each, a value of 1."""
    return vector(*(series("1", namespace=ns, pod=pod) for ns, pods in namespaces.items() for pod in pods))


async def test_a_target_reading_a_small_part_of_its_namespace_names_its_pods() -> None:
    reader, client = make_reader(lambda q: vector(series("2", namespace="shop", pod="web-1")))
    rows = await reader.read([target("shop", "web", ("web-1", "web.2"), known=40)], AT)
    assert client.queries == ['sum by (namespace, pod) (m{namespace="shop", pod=~"web-1|web\\\\.2"})']
    reading = rows[0][0]
    assert isinstance(reading, PodsReading) and {p: s.value for p, s in reading.pods.items()} == {"web-1": 2000}


async def test_a_namespace_read_mostly_by_the_batch_is_asked_whole() -> None:
    """Three of five known pods (a query naming them costs more than two series), or a namespace whose
    pods the service does not know: whole."""
    reader, client = make_reader(lambda q: vector())
    await reader.read([target("shop", "web", ("web-1", "web-2", "web-3"), known=5)], AT)
    await reader.read([target("shop", "web", ("web-1",), known=0)], AT)
    assert client.queries == ['sum by (namespace, pod) (m{namespace="shop"})'] * 2


async def test_the_batch_share_counts_every_target_of_the_namespace() -> None:
    """Two targets of 3 pods each, each alone a small part of a namespace of 7: the 6 of 7 they read
    together are asked for whole; in a namespace of 100, the two targets' pods are named in one query."""
    for known, named in ((7, False), (100, True)):
        reader, client = make_reader(lambda q: vector())
        a = target("shop", "a", ("a-1", "a-2", "a-3"), known)
        b = target("shop", "b", ("b-1", "b-2", "b-3"), known)
        await reader.read([a, b], AT)
        assert len(client.queries) == 1
        assert pods_in(client.queries[0]) == ({"a-1", "a-2", "a-3", "b-1", "b-2", "b-3"} if named else None)


async def test_whole_and_named_namespaces_in_one_batch_each_get_their_readings() -> None:
    cluster = {"shop": ["web-1", "web-2"] + [f"other-{i}" for i in range(8)], "blog": ["api-1", "api-2"]}

    def answer(query: str) -> InstantResult:
        asked = {ns: pods for ns, pods in cluster.items() if ns in namespaces_in(query)}
        named = pods_in(query)
        return every_pod_of({ns: [p for p in pods if named is None or p in named] for ns, pods in asked.items()})

    reader, client = make_reader(answer)
    rows = await reader.read(
        [target("shop", "web", ("web-1", "web-2"), known=10), target("blog", "api", ("api-1", "api-2"), known=3)], AT
    )
    assert sorted(client.queries) == [
        'sum by (namespace, pod) (m{namespace="blog"})',
        'sum by (namespace, pod) (m{namespace="shop", pod=~"web-1|web-2"})',
    ]
    assert [set(cast(PodsReading, row[0]).pods) for row in rows] == [{"web-1", "web-2"}, {"api-1", "api-2"}]


async def test_named_queries_fit_the_length_limit_and_never_split_a_target() -> None:
    """60 targets of 10 long pod names in 6 namespaces of 10,000 pods, two of them sharing 5 pods: every
    query within maxQueryLength, each target's pods all in the one query that reads it, no pod of the
    batch left out, and no more queries than whole targets packed in turn take (two of ~360 bytes a query)."""
    targets = []
    for i in range(60):
        namespace = f"team-{i % 6}"
        pods = tuple(f"deployment-{i:03d}-5d8f7c9b4-pod{j:02d}" for j in range(10))
        if i == 7:  # overlapping selectors: half of target 1's pods (same namespace) too
            pods = tuple(sorted(pods[:5] + tuple(f"deployment-001-5d8f7c9b4-pod{j:02d}" for j in range(5))))
        targets.append(target(namespace, f"t{i}", pods, known=10_000))
    readers_of: dict[str, set[str]] = {}

    def answer(query: str) -> InstantResult:
        named = pods_in(query)
        assert named is not None
        for pod in named:
            readers_of.setdefault(pod, set()).add(query)
        return vector(*(series("1", namespace=ns, pod=p) for ns in namespaces_in(query) for p in sorted(named)))

    reader, client = make_reader(answer, max_query_length=1024)
    rows = await reader.read(targets, AT)
    assert all(len(q) <= 1024 for q in client.queries)
    assert len(client.queries) <= 30
    for t, row in zip(targets, rows, strict=True):
        reading = row[0]
        assert isinstance(reading, PodsReading) and set(reading.pods) == set(t.pod_names), t.name
        reads = [
            q for q in client.queries if t.namespace in namespaces_in(q) and set(t.pod_names) <= (pods_in(q) or set())
        ]
        assert reads, t.name


async def test_a_target_whose_pods_alone_exceed_the_limit_is_read_by_namespace() -> None:
    reader, client = make_reader(lambda q: vector(), max_query_length=1024)
    pods = tuple(f"a-rather-long-deployment-name-7c9b4d8f5-{i:05d}" for i in range(40))
    await reader.read([target("shop", "big", pods, known=100_000), target("blog", "small", ("s-1",), known=100)], AT)
    assert sorted(client.queries) == [
        'sum by (namespace, pod) (m{namespace="blog", pod=~"s-1"})',
        'sum by (namespace, pod) (m{namespace="shop"})',
    ]


async def test_ambiguous_names_are_asked_again_per_namespace_naming_that_namespaces_pods() -> None:
    """Series without a namespace label, ``db-0`` named in both namespaces of one query: asked again one
    namespace at a time, each query naming only its own namespace's pods."""

    def answer(query: str) -> InstantResult:
        spaces, named = namespaces_in(query), pods_in(query) or set()
        if spaces == {"a", "b"}:
            return vector(series("1", pod="db-0"), series("2", pod="db-0"), series("3", pod="x-1"))
        return vector(*(series("7" if spaces == {"a"} else "8", pod=p) for p in sorted(named)))

    query = "sum by (pod) (m{<<scope>>})"
    reader, client = make_reader(answer)
    metric = sc.pods_metric(query)
    targets = [target("a", "ta", ("db-0", "x-1"), 100, metric), target("b", "tb", ("db-0",), 100, metric)]
    rows = await reader.read(targets, AT)
    assert [{p: s.value for p, s in cast(PodsReading, r[0]).pods.items()} for r in rows] == [
        {"db-0": 7000, "x-1": 7000},
        {"db-0": 8000},
    ]
    assert client.queries[1:] == [
        'sum by (pod) (m{namespace="a", pod=~"db-0|x-1"})',
        'sum by (pod) (m{namespace="b", pod=~"db-0"})',
    ]
    client.queries.clear()
    await reader.read(targets, AT)  # remembered: one query per namespace at once
    assert client.queries == [
        'sum by (pod) (m{namespace="a", pod=~"db-0|x-1"})',
        'sum by (pod) (m{namespace="b", pod=~"db-0"})',
    ]


class FilterRecorder:
    """A client that answers nothing and keeps, per query, whether the reader asked for a series filter."""

    def __init__(self) -> None:
        self.filtered: list[bool] = []

    async def query(self, promql: str, at: float | None, *, keep: object = None, **_options: object) -> InstantResult:
        self.filtered.append(keep is not None)
        return vector()


async def test_an_answer_is_filtered_while_decoded_only_where_much_of_it_is_other_pods() -> None:
    """Every known pod read (the usual batch of a whole namespace): no filter called per series; a
    namespace with more than a quarter of other pods, or one whose pods are not known: filtered; pods
    named in the query: not filtered (the answer holds those)."""
    pods = tuple(f"web-{i}" for i in range(30))
    for known, filtered in ((30, False), (40, False), (41, True), (0, True), (1000, False)):
        client = FilterRecorder()
        reader = MetricsReader(cast(PrometheusClient, client), PrometheusSettings(url="http://prom"))
        await reader.read([target("shop", "web", pods, known)], AT)
        assert client.filtered == [filtered], known
