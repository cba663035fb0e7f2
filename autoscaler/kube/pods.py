"""Selecting a target's pods from the pod cache by its scale's label selector, without scanning.

Pods of one template carry the same labels, so the index keeps pods in groups of equal labels (namespace →
label set → pods by name) and indexes the groups, not the pods, by label (namespace → key=value → label
sets): a pod costs one dictionary entry, not one set entry per label (why: docs/benchmarks-history.md,
"Pods in groups of equal labels"). The equality and ``in`` requirements of a selector pick the candidate
groups; the rest of the selector is checked once per group. Selection costs the groups of the smallest
matching index bucket, not the number of pods in the cluster.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from autoscaler.kube.labels import LabelSelector
from autoscaler.kube.records import PodRecord
from autoscaler.kube.watch import Key

LabelSet = frozenset[tuple[str, str]]


class _Group:
    """The pods of a namespace that carry one set of labels."""

    __slots__ = ("labels", "pods")

    def __init__(self, labels: Mapping[str, str]) -> None:
        self.labels = labels
        self.pods: dict[str, PodRecord] = {}


def _name(pod: PodRecord) -> str:
    return pod.name


class PodIndex:
    def __init__(self) -> None:
        self._groups: dict[str, dict[LabelSet, _Group]] = defaultdict(dict)
        self._by_label: dict[str, dict[tuple[str, str], set[LabelSet]]] = defaultdict(lambda: defaultdict(set))
        self._membership: dict[str, int] = defaultdict(int)
        self._counts: dict[str, int] = defaultdict(int)  # pods per namespace
        # Any change of a namespace's pods (status too) bumps its version; select() answers a selector
        # asked again at the same version from memory: every target asks once per sync, and a pod
        # changes far less often than that.
        self._version: dict[str, int] = defaultdict(int)
        self._selected: dict[str, tuple[int, dict[LabelSelector, list[PodRecord]]]] = {}

    def membership_version(self, namespace: str) -> int:
        """Changes whenever a pod of ``namespace`` appears, goes or changes its labels, i.e. whenever
        the answer of :meth:`select` may change for some selector (status changes leave it alone)."""
        return self._membership[namespace]

    def on_change(self, key: Key, old: PodRecord | None, new: PodRecord | None) -> None:
        """The pod cache's change handler (``old``: the record it had, ``new``: the one it has now)."""
        namespace, name = key
        self._version[namespace] += 1
        groups = self._groups[namespace]
        old_set = frozenset(old.labels.items()) if old is not None else None
        new_set = frozenset(new.labels.items()) if new is not None else None
        if old_set != new_set:  # the pod came, went or changed its labels (None: not there)
            self._membership[namespace] += 1
            self._counts[namespace] += (new is not None) - (old is not None)
        if old_set is not None and old_set != new_set:
            group = groups.get(old_set)
            if group is not None:
                group.pods.pop(name, None)
                if not group.pods:
                    self._drop(namespace, old_set)
        if new is not None and new_set is not None:
            group = groups.get(new_set)
            if group is None:
                group = groups[new_set] = _Group(new.labels)
                by_label = self._by_label[namespace]
                for pair in new_set:
                    by_label[pair].add(new_set)
            group.pods[name] = new

    def _drop(self, namespace: str, label_set: LabelSet) -> None:
        """Forget an empty group, and its place in the label index."""
        del self._groups[namespace][label_set]
        by_label = self._by_label[namespace]
        for pair in label_set:
            bucket = by_label.get(pair)
            if bucket is not None:
                bucket.discard(label_set)
                if not bucket:
                    del by_label[pair]

    def select(self, namespace: str, selector: LabelSelector) -> list[PodRecord]:
        """The pods of ``namespace`` that ``selector`` matches, in name order (a shared list: do not
        modify it)."""
        version = self._version[namespace]
        memo = self._selected.get(namespace)
        if memo is None or memo[0] != version:
            memo = self._selected[namespace] = (version, {})
        selected = memo[1].get(selector)
        if selected is None:
            selected = memo[1][selector] = self._select(namespace, selector)
        return selected

    def _select(self, namespace: str, selector: LabelSelector) -> list[PodRecord]:
        groups = self._groups.get(namespace)
        if not groups:
            return []
        candidates: set[LabelSet] | None = None
        by_label = self._by_label[namespace]
        for key, values in selector.indexable():
            sets: set[LabelSet] = set()
            for value in values:
                sets |= by_label.get((key, value), set())
            candidates = sets if candidates is None or len(sets) < len(candidates) else candidates
            if not candidates:
                return []
        pool = (groups[s] for s in candidates) if candidates is not None else iter(groups.values())
        selected = [pod for group in pool if selector.matches(group.labels) for pod in group.pods.values()]
        selected.sort(key=_name)
        return selected

    def count_in(self, namespace: str) -> int:
        """The pods of ``namespace``."""
        return self._counts.get(namespace, 0)

    def count(self) -> int:
        return sum(len(group.pods) for groups in self._groups.values() for group in groups.values())
