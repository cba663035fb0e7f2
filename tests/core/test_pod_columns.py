"""Per-pod readings held as columns read exactly as the dict of samples (or usages) they stand for."""

from __future__ import annotations

import gc

from hypothesis import given
from hypothesis import strategies as st

from autoscaler.core.metrics import pod_samples
from autoscaler.core.observation import PodsReading, PodUsage, ResourceReading, Sample
from autoscaler.core.pod_columns import SampleColumns, UsageColumns
from autoscaler.core.spec import MetricSourceType, MetricSpec, MetricTarget, MetricTargetType

pods = st.sampled_from(["p0", "p1", "p2", "p3"])
times = st.dictionaries(pods, st.sampled_from([4.0, 6.0]), max_size=2)


@given(values=st.dictionaries(pods, st.integers(-(10**12), 10**12)), times=times)
def test_sample_columns_are_the_dict_of_samples(values: dict[str, int], times: dict[str, float]) -> None:
    columns = SampleColumns(dict(values), 5.0, 30.0, times)
    expected = {pod: Sample(value, times.get(pod, 5.0), 30.0) for pod, value in values.items()}
    assert columns == expected and expected == columns
    assert dict(columns) == expected == columns.samples()
    assert list(columns) == list(expected) and len(columns) == len(expected)
    assert list(columns.items()) == list(expected.items()) and list(columns.values()) == list(expected.values())
    for pod in ["p0", "p1", "p2", "p3", "nope"]:
        assert (pod in columns) == (pod in expected)
        assert columns.get(pod) == expected.get(pod)
    assert PodsReading(columns) == PodsReading(expected)
    assert bool(columns) == bool(expected)


@given(
    containers=st.dictionaries(
        pods, st.dictionaries(st.sampled_from(["app", "side"]), st.one_of(st.none(), st.integers(0, 10**9)))
    ),
    times=times,
)
def test_usage_columns_are_the_dict_of_usages(
    containers: dict[str, dict[str, int | None]], times: dict[str, float]
) -> None:
    columns = UsageColumns(containers, 5.0, 30.0, times)
    expected = {pod: PodUsage(c, times.get(pod, 5.0), 30.0) for pod, c in containers.items()}
    assert columns == expected and expected == columns
    assert dict(columns) == expected
    assert repr(columns) == f"UsageColumns({expected!r})"
    assert list(columns.items()) == list(expected.items()) and list(columns.values()) == list(expected.values())
    assert list(columns) == list(expected) and len(columns) == len(expected)
    for pod in ["p0", "p1", "p2", "p3", "nope"]:
        assert (pod in columns) == (pod in expected)
        assert columns.get(pod) == expected.get(pod)
    assert ResourceReading(columns) == ResourceReading(expected)
    for container in (None, "app", "side", "absent"):  # Resource, and ContainerResource of each container
        spec = MetricSpec(
            type=MetricSourceType.CONTAINER_RESOURCE if container else MetricSourceType.RESOURCE,
            name="cpu",
            target=MetricTarget(MetricTargetType.UTILIZATION, average_utilization=50),
            container=container,
        )
        from_columns = pod_samples(spec, ResourceReading(columns))
        assert from_columns == pod_samples(spec, ResourceReading(expected))
        assert list(from_columns) == list(pod_samples(spec, ResourceReading(expected)))


def tracked_inside(root: object) -> int:
    """How many objects the cyclic collector tracks in ``root`` and the containers it holds."""
    seen: set[int] = set()
    stack, tracked = [root], 0
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, type):
            continue
        seen.add(id(item))
        tracked += gc.is_tracked(item)
        stack.extend(gc.get_referents(item))
    return tracked


def test_a_reading_of_many_pods_is_a_few_tracked_objects_not_one_a_pod() -> None:
    """The reason for the columns: the collector counts and walks what it tracks. A thousand pods' samples
    held as named tuples are a thousand tracked objects (a named tuple is never untracked)."""
    values = {f"p{i}": i for i in range(1000)}
    containers = {f"p{i}": {"app": i, "side": None} for i in range(1000)}
    assert tracked_inside(PodsReading(SampleColumns(values, 5.0, 30.0, {"p1": 4.0}))) <= 3
    assert tracked_inside(ResourceReading(UsageColumns(containers, 5.0))) <= 3
    assert tracked_inside(PodsReading(SampleColumns(values, 5.0).samples())) > 1000


def test_the_columns_say_what_they_hold() -> None:
    assert repr(SampleColumns({"p0": 1}, 5.0)) == "SampleColumns({'p0': Sample(value=1, timestamp=5.0, window=60.0)})"
    assert "PodUsage(containers={'app': 1}" in repr(UsageColumns({"p0": {"app": 1}}, 5.0))
