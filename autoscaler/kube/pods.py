"""Selecting a target's pods from the pod cache by its scale's label selector, without scanning.

An index (namespace → label key=value → pod names) answers the equality and ``in`` requirements;
the rest of the selector filters the (small) candidate set. Selection costs the size of the
smallest matching index bucket, not the number of pods in the cluster.
"""

from __future__ import annotations

from collections import defaultdict

from autoscaler.kube.labels import LabelSelector
from autoscaler.kube.records import PodRecord
from autoscaler.kube.watch import Key


class PodIndex:
    def __init__(self) -> None:
        self._pods: dict[str, dict[str, PodRecord]] = defaultdict(dict)
        self._by_label: dict[str, dict[tuple[str, str], set[str]]] = defaultdict(lambda: defaultdict(set))
        self._membership: dict[str, int] = defaultdict(int)
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
        """The pod cache's change handler."""
        namespace, name = key
        self._version[namespace] += 1
        if old is None or new is None or old.labels != new.labels:
            self._membership[namespace] += 1
        if old is not None:
            labels = self._by_label[namespace]
            for pair in old.labels.items():
                bucket = labels.get(pair)
                if bucket is not None:
                    bucket.discard(name)
                    if not bucket:
                        del labels[pair]
            self._pods[namespace].pop(name, None)
        if new is not None:
            self._pods[namespace][name] = new
            labels = self._by_label[namespace]
            for pair in new.labels.items():
                labels[pair].add(name)

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
        pods = self._pods.get(namespace)
        if not pods:
            return []
        candidates: set[str] | None = None
        labels = self._by_label[namespace]
        for key, values in selector.indexable():
            names: set[str] = set()
            for value in values:
                names |= labels.get((key, value), set())
            candidates = names if candidates is None or len(names) < len(candidates) else candidates
            if not candidates:
                return []
        pool = (pods[n] for n in candidates) if candidates is not None else iter(pods.values())
        return sorted((p for p in pool if selector.matches(p.labels)), key=lambda p: p.name)

    def count(self) -> int:
        return sum(len(p) for p in self._pods.values())
