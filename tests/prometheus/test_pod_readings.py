"""Per-pod readings made while an answer is decoded (:class:`PodReadings` as the decoder's sink) are the
readings of the decoded vector, whatever the answer holds: odd elements, duplicates, series without the
namespace label, NaN values, any slicing. What the sink cannot read it refuses, and the answer is then
decoded into a vector as before."""

from __future__ import annotations

import contextlib
import gc
import types
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.core.observation import PodsReading, PodUsage, ResourceReading
from autoscaler.core.pod_columns import UsageColumns
from autoscaler.prometheus.errors import PrometheusMalformedResponse
from autoscaler.prometheus.extract import LabelNames, PodReadings, readings_in_steps
from autoscaler.prometheus.results import InstantResult, parse_instant
from autoscaler.prometheus.slicing import instant_in_slices
from tests.prometheus.stepping import run_counting_turns, to_the_end

Readings = list[tuple[ResourceReading | PodsReading, int]] | None

labels = st.builds(
    lambda pod, namespace, container: {
        k: v for k, v in (("pod", pod), ("namespace", namespace), ("container", container)) if v is not None
    },
    st.one_of(st.none(), st.sampled_from(["p0", "p1", "p2", "x"])),
    st.one_of(st.none(), st.sampled_from(["a", "b"])),
    st.one_of(st.none(), st.sampled_from(["app", "side", ""])),
)
good_series = st.fixed_dictionaries(
    {
        "metric": labels,
        "value": st.tuples(
            st.one_of(st.floats(0, 2e9, allow_nan=False), st.integers(0, 2**31)),
            st.sampled_from(["1", "0.25", "NaN", "+Inf", "3.0000001", "0.2500000001", "-0.5", "1e-3"]),
        ).map(list),
    }
)
odd_elements = st.sampled_from(
    [
        5,
        "series",
        {"value": [1.5, "1"]},  # no "metric": a series without labels
        {"metric": None, "value": [1.5, "1"]},
        {"metric": {"pod": "p0", "namespace": "a"}, "value": [1.5, 2]},
        {"metric": {"pod": "p0", "namespace": "a"}, "value": ["1.5", "2"]},  # a time as text
        {"metric": {"pod": "p0", "namespace": "a"}, "value": [True, "2"]},
        {"metric": {"pod": "p0", "namespace": "a"}, "value": [1.5, "2", 3]},
        {"metric": {"pod": "x", "namespace": "b"}, "values": [[1.5, "2"]]},  # a matrix's series
    ]
)
wanted_sets = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.frozensets(st.sampled_from(["p0", "p1", "p2"]))), min_size=1, max_size=3
)


def decode_then_read(
    payload: bytes, wanted: list[tuple[str, frozenset[str]]], per_container: bool, nanocores: bool
) -> tuple[Readings, int]:
    """The readings as the reader made them before: the answer decoded whole, then read."""
    vector = parse_instant(orjson.loads(payload)).vector
    readings = to_the_end(
        readings_in_steps(vector, wanted, LabelNames(), 30.0, per_container=per_container, nanocores=nanocores)
    )
    return readings, len(vector)


def read_while_decoding(
    payload: bytes, wanted: list[tuple[str, frozenset[str]]], per_container: bool, nanocores: bool, slice_bytes: int
) -> tuple[Readings, int, InstantResult]:
    """The readings as the reader makes them now: the sink's if it took the answer, else the vector's."""
    sink = PodReadings(wanted, LabelNames(), 30.0, per_container=per_container, nanocores=nanocores)
    result = to_the_end(instant_in_slices(payload, sink=sink if sink.usable else None, slice_bytes=slice_bytes))
    if result.sunk is not None:
        return sink.readings(), result.sunk, result
    readings = to_the_end(
        readings_in_steps(result.vector, wanted, LabelNames(), 30.0, per_container=per_container, nanocores=nanocores)
    )
    return readings, len(result.vector), result


@given(
    items=st.lists(st.one_of(good_series, good_series, good_series, odd_elements), max_size=12),
    wanted=wanted_sets,
    per_container=st.booleans(),
    nanocores=st.booleans(),
    slice_bytes=st.integers(1, 300),
)
def test_readings_made_while_decoding_equal_the_decoded_vectors(
    items: list[Any], wanted: list[tuple[str, frozenset[str]]], per_container: bool, nanocores: bool, slice_bytes: int
) -> None:
    payload = orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": items}})
    try:
        expected = decode_then_read(payload, wanted, per_container, nanocores)
    except PrometheusMalformedResponse:
        with pytest.raises(PrometheusMalformedResponse):
            read_while_decoding(payload, wanted, per_container, nanocores, slice_bytes)
        return
    readings, returned, result = read_while_decoding(payload, wanted, per_container, nanocores, slice_bytes)
    assert (readings, returned) == expected
    if all(type(item) is dict and type(item["value"][0]) in (int, float) for item in items) and readings is not None:
        assert result.sunk == len(items)  # nothing the sink could not read: it read it all


def test_a_batched_answer_goes_to_the_sink_a_slice_a_step() -> None:
    items = [
        {"metric": {"namespace": "a", "pod": f"p{i}", "container": "app"}, "value": [1.5, "0.25"]} for i in range(900)
    ]
    payload = orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": items}})
    wanted = [("a", frozenset(f"p{i}" for i in range(t, 900, 3))) for t in range(3)]
    sink = PodReadings(wanted, LabelNames(), 30.0, per_container=True)
    turns, result = run_counting_turns(instant_in_slices(payload, sink=sink, slice_bytes=4096))
    assert result.sunk == 900 and len(result.vector) == 0 and turns >= len(payload) // 4200
    readings = sink.readings()
    assert [count for _, count in readings] == [300, 300, 300]
    first = readings[0][0]
    assert isinstance(first, ResourceReading) and first.pods["p0"] == PodUsage({"app": 250}, 1.5, 30.0)
    assert isinstance(first.pods, UsageColumns) and not first.pods.times  # one answer, one time
    # Decoded again (a sink is begun afresh): the same readings, nothing counted twice.
    to_the_end(instant_in_slices(payload, sink=sink, slice_bytes=4096))
    assert sink.readings() == readings


def test_what_the_sink_refuses_is_decoded_into_a_vector() -> None:
    one = {"metric": {"namespace": "a", "pod": "p0", "container": "app"}, "value": [1.5, "0.25"]}
    cases = {
        "a duplicate series": [one, one],
        "a series without the namespace label": [one, {"metric": {"pod": "p1"}, "value": [1.5, "1"]}],
        "a time written as text": [one, {"metric": {"namespace": "a", "pod": "p1"}, "value": ["1.5", "1"]}],
    }
    for case, items in cases.items():
        payload = orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": items}})
        sink = PodReadings([("a", frozenset({"p0", "p1"}))], LabelNames(), 30.0, per_container=True)
        result = to_the_end(instant_in_slices(payload, sink=sink))
        assert result.sunk is None and len(result.vector) == 2, case
        assert result == parse_instant(orjson.loads(payload)), case
    shared = PodReadings(
        [("a", frozenset({"p0"})), ("a", frozenset({"p0", "p1"}))], LabelNames(), 30.0, per_container=False
    )
    assert not shared.usable  # a pod wanted twice: the reader passes no sink, the general path reads it


def _held_by_generators(steps: object) -> list[object]:
    """What a suspended generator holds, and the generators it delegates to: its locals and temporaries.
    Asked of the collector rather than of ``gi_frame``, which a compiled generator (mypyc) has not: there
    the locals are attributes of the generator's objects (classes named ``…_gen`` and ``…_env``)."""

    def is_generator(value: object) -> bool:
        return isinstance(value, types.GeneratorType) or type(value).__name__.endswith(("_gen", "_env"))

    held: list[object] = []
    todo, seen = [steps], {id(steps)}
    while todo:
        for value in gc.get_referents(todo.pop()):
            if is_generator(value):
                if id(value) not in seen:
                    seen.add(id(value))
                    todo.append(value)
            else:
                held.append(value)
    return held


def test_no_decoded_slice_is_held_across_a_turn() -> None:
    """Between two steps the loop runs, and a young collection may start: the slice a step decoded is freed
    inside it, not held by the decoder's frame until the next (the collection walked them all)."""
    items = [{"metric": {"namespace": "a", "pod": f"p{i}"}, "value": [1.5, "1"]} for i in range(600)]
    payload = orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": items}})
    for sink in (PodReadings([("a", frozenset({"p1"}))], LabelNames(), 30.0, per_container=False), None):
        steps = instant_in_slices(payload, sink=sink, slice_bytes=2048)
        turns = 0
        with contextlib.suppress(StopIteration):
            while True:
                next(steps)
                turns += 1
                held = [v for v in _held_by_generators(steps) if type(v) is list and len(v) > 1]
                assert held == [], f"{len(held[0])} decoded series held across turn {turns}"
        assert turns > 10


def test_the_sink_decodes_each_series_into_an_untracked_record_of_three_labels() -> None:
    """A slice decodes into one record a series, which the cyclic collector does not track, holding the pod,
    namespace and container labels and the value; no other label is made."""
    raw = orjson.dumps(
        [
            {
                "metric": {"namespace": "a", "pod": "p0", "container": "app", "instance": "10.0.0.1:8080", "job": "k"},
                "value": [1.5, "0.25"],
            },
            {"value": [2, "1"]},  # no labels; a time written as an integer
        ]
    )
    sink = PodReadings([("a", frozenset({"p0"}))], LabelNames(), 30.0, per_container=True)
    first, second = sink.decode(raw)
    assert (first.metric.pod, first.metric.namespace, first.metric.container, first.value) == (
        "p0",
        "a",
        "app",
        (1.5, "0.25"),
    )
    assert not hasattr(first.metric, "instance") and not hasattr(first.metric, "job")
    assert (second.metric.pod, second.metric.namespace, second.metric.container) == (None, None, "")
    assert second.value == (2.0, "1") and type(second.value[0]) is float
    assert not gc.is_tracked(first) and not gc.is_tracked(first.metric)
    for odd in (b"[5]", b'[{"metric": {"pod": 1}, "value": [1, "2"]}]', b'[{"value": [1, "2", 3]}]', b"[{"):
        with pytest.raises(ValueError):
            sink.decode(odd)


def test_configured_label_names_are_what_the_sink_reads() -> None:
    """The labels the service is configured with are the ones read (a label named like a default one is
    not); label names that name one label twice leave the answer to the general path."""
    names = LabelNames(pod="kubernetes_pod_name", container="container_name", namespace="kubernetes_namespace")
    items = [
        {
            "metric": {"kubernetes_namespace": "a", "kubernetes_pod_name": "p0", "container_name": "app", "pod": "x"},
            "value": [1.5, "0.25"],
        }
    ]
    payload = orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": items}})
    sink = PodReadings([("a", frozenset({"p0"}))], names, 30.0, per_container=True)
    result = to_the_end(instant_in_slices(payload, sink=sink))
    assert result.sunk == 1
    [(reading, count)] = sink.readings()
    assert count == 1
    assert isinstance(reading, ResourceReading) and dict(reading.pods) == {"p0": PodUsage({"app": 250}, 1.5, 30.0)}
    one_label_twice = LabelNames(pod="pod", container="pod", namespace="namespace")
    assert not PodReadings([("a", frozenset({"p0"}))], one_label_twice, 30.0, per_container=True).usable
