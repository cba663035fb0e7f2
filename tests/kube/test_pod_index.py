"""The pod index: selection by label selector, answered again from memory until the namespace's pods change."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.core.observation import PodPhase
from autoscaler.kube.labels import parse_label_selector
from autoscaler.kube.pods import PodIndex
from autoscaler.kube.records import PodRecord


def record(name: str, namespace: str = "default", phase: PodPhase = PodPhase.RUNNING, **labels: str) -> PodRecord:
    return PodRecord(name, phase=phase, namespace=namespace, labels=labels)


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


SELECTORS = ["app=web", "app=web,tier=front", "app in (web,db)", "tier=front", "app=db"]
LABELS = ["web,front", "web,back", "db,front", "db,back"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["default", "other"]),
            st.sampled_from("pqrstu"),
            st.one_of(st.none(), st.sampled_from([*LABELS, "web", ""])),
            st.booleans(),
        ),
        max_size=40,
    )
)
def test_selection_is_what_matching_every_pod_says(steps: list[tuple[str, str, str | None, bool]]) -> None:
    """Pods come, change their labels (in any order of keys) and go: every selector's answer is the
    brute-force one over the pods there are now, each namespace's count is its pods', and emptied label
    groups leave nothing behind."""
    index = PodIndex()
    pods: dict[tuple[str, str], PodRecord] = {}
    for namespace, name, value, reverse in steps:
        key = (namespace, name)
        after = None
        if value is not None:
            app, _, tier = value.partition(",")
            labels = {k: v for k, v in (("app", app), ("tier", tier)) if v}
            labels = dict(reversed(labels.items())) if reverse else labels
            after = PodRecord(name, namespace=namespace, labels=labels)
        # the record the cache had, as an equal copy: the index must not rely on it being the same object
        before = pods.get(key)
        index.on_change(
            key, PodRecord(name, namespace=namespace, labels=dict(before.labels)) if before else None, after
        )
        if after is None:
            pods.pop(key, None)
        else:
            pods[key] = after
        for selector_text in [*SELECTORS, "!tier", "app"]:
            selector = parse_label_selector(selector_text)
            for ns in ("default", "other"):
                expected = sorted(n for (where, n), p in pods.items() if where == ns and selector.matches(p.labels))
                assert [p.name for p in index.select(ns, selector)] == expected
        for ns in ("default", "other"):
            assert index.count_in(ns) == sum(where == ns for where, _ in pods)
    assert index.count() == len(pods)
