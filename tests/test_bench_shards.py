"""The benchmark's two shard layouts (bench/servicebench/run.py ``shard_of``): every namespace's targets split over
the shards, and whole namespaces round robin (docs/sharding.md's advice, each shard then watching only its own
namespaces)."""

from __future__ import annotations

from collections import defaultdict

from tests.bench_modules import servicebench


def test_by_target_splits_every_namespace_and_by_namespace_keeps_each_whole() -> None:
    with servicebench("cluster") as cluster, servicebench("run") as run:
        plan = cluster.layout(200, 2, 10)
        for by, split in (("target", True), ("namespace", False)):
            shards_of: dict[str, set[str]] = defaultdict(set)
            for w in plan:
                shards_of[w.namespace].add(run.shard_of(w, 2, by, 10))
            assert all(len(shards) == (2 if split else 1) for shards in shards_of.values()), by
            counts = defaultdict(int)
            for w in plan:
                counts[run.shard_of(w, 2, by, 10)] += 1
            assert counts == {"shard-0": 100, "shard-1": 100}
        assert run.shard_of(plan[0], 1, "namespace", 10) is None  # one unsharded service


def test_bystanders_fill_every_namespace_with_pods_no_target_selects() -> None:
    """``--bystanders 25`` with 10 pods a Deployment: 25 pods in each namespace (Deployments of 10, 10 and
    5), named apart from the targets' pods and labelled apart from every target's selector."""
    with servicebench("cluster") as cluster:
        plan, others = cluster.layout(20, 10, 4), cluster.bystanders(25, 10, 4)
        per_namespace: dict[str, int] = defaultdict(int)
        for w in others:
            per_namespace[w.namespace] += len(w.pods)
        assert per_namespace == {f"team-{i:03d}": 25 for i in range(4)}
        assert sorted(len(w.pods) for w in others if w.namespace == "team-000") == [5, 10, 10]
        targets_pods = {p for w in plan for p in w.pods}
        assert not targets_pods & {p for w in others for p in w.pods}
        assert not {w.name for w in plan} & {w.name for w in others}  # app=<name>: no target selects them
