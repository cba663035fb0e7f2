"""The pod index: selection by label selector, answered again from memory until the namespace's pods change."""

from __future__ import annotations

from autoscaler.core.observation import PodInfo, PodPhase
from autoscaler.kube.labels import parse_label_selector
from autoscaler.kube.pods import PodIndex
from autoscaler.kube.records import PodRecord


def record(name: str, namespace: str = "default", phase: PodPhase = PodPhase.RUNNING, **labels: str) -> PodRecord:
    return PodRecord(namespace, name, labels, PodInfo(name, phase=phase))


def names(index: PodIndex, selector: str, namespace: str = "default") -> list[str]:
    return [p.name for p in index.select(namespace, parse_label_selector(selector))]


def test_selection_follows_every_change_of_the_namespace() -> None:
    index = PodIndex()
    web = parse_label_selector("app=web")
    for pod in (record("b", app="web"), record("a", app="web"), record("c", app="db"), record("d", "other", app="web")):
        index.on_change((pod.namespace, pod.name), None, pod)
    first = index.select("default", web)
    assert [p.name for p in first] == ["a", "b"]
    assert index.select("default", web) is first  # unchanged namespace: answered from memory
    # a status change (same labels) is seen: the records are the new ones
    pending = record("a", phase=PodPhase.PENDING, app="web")
    index.on_change(("default", "a"), first[0], pending)
    assert [p.info.phase for p in index.select("default", web)] == [PodPhase.PENDING, PodPhase.RUNNING]
    # a label change moves the pod out; a deletion and an arrival are seen
    index.on_change(("default", "b"), record("b", app="web"), record("b", app="db"))
    assert names(index, "app=web") == ["a"]
    assert names(index, "app=db") == ["b", "c"]
    index.on_change(("default", "c"), record("c", app="db"), None)
    index.on_change(("default", "e"), None, record("e", app="web", tier="front"))
    assert names(index, "app=db") == ["b"]
    assert names(index, "app=web") == ["a", "e"]
    assert names(index, "app=web,tier!=front") == ["a"]
    assert names(index, "app=web", "other") == ["d"]
    assert names(index, "app=web", "nowhere") == []


def test_other_namespaces_keep_their_answers() -> None:
    index = PodIndex()
    web = parse_label_selector("app=web")
    index.on_change(("one", "a"), None, record("a", "one", app="web"))
    index.on_change(("two", "b"), None, record("b", "two", app="web"))
    before = index.select("one", web)
    index.on_change(("two", "c"), None, record("c", "two", app="web"))
    assert index.select("one", web) is before
    assert names(index, "app=web", "two") == ["b", "c"]
