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
