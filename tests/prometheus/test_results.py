"""Decoding a large answer a series at a time gives what decoding it whole gives (less what the filter
leaves out), and falls back to the whole decode for anything else."""

from __future__ import annotations

import gc
import json
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.prometheus.errors import PrometheusMalformedResponse
from autoscaler.prometheus.results import Series, Vector, parse_instant, rows
from autoscaler.prometheus.slicing import instant_in_slices
from tests.prometheus.stepping import decoded_in_slices, run_counting_turns

label_values = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12),
    st.sampled_from(['},{"metric":', '"},{"metric":{"pod":"x"}', "]", '"result":[']),  # what the slicer looks for
)
series = st.fixed_dictionaries(
    {
        "metric": st.dictionaries(
            st.sampled_from(["pod", "namespace", "result", "metric", "x"]), label_values, max_size=4
        ),
        "value": st.tuples(st.floats(0, 2e9, allow_nan=False), st.sampled_from(["1", "NaN", "0.25", "+Inf"])).map(list),
    }
)


def vector_answer(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": items}, **extra}


@given(st.lists(series, max_size=8), st.booleans(), st.booleans())
def test_pieces_equal_the_whole(items: list[dict[str, Any]], pretty: bool, warnings: bool) -> None:
    document = vector_answer(items, **({"warnings": ['a "result":[ in text']} if warnings else {}))
    payload = json.dumps(document, indent=1 if pretty else None).encode()
    assert decoded_in_slices(payload) == parse_instant(orjson.loads(payload))


@given(st.lists(series, max_size=30), st.integers(1, 400), st.booleans())
def test_any_slicing_of_a_compact_answer_equals_the_whole(
    items: list[dict[str, Any]], size: int, filtered: bool
) -> None:
    """Compact JSON, as Prometheus writes it, is decoded a slice of series at a time (cut before each
    ``},{"metric":``): whatever the slice size and whatever the label values hold, the same answer."""
    payload = orjson.dumps(vector_answer(items, warnings=["w"]))

    def keep(labels: Any) -> bool:
        return str(labels.get("pod", "")).startswith(("a", "}"))

    whole = parse_instant(orjson.loads(payload))
    result = decoded_in_slices(payload, keep if filtered else None, slice_bytes=size)
    assert result.vector == tuple(s for s in whole.vector if not filtered or keep(s.labels))
    assert result.left_out == len(whole.vector) - len(result.vector)
    assert result.warnings == ("w",)


def test_a_large_answer_is_decoded_in_steps_of_a_slice() -> None:
    """Between two slices of ``slice_bytes`` the generator yields (the client gives the loop a turn there)."""
    items = [{"metric": {"namespace": "ns", "pod": f"pod-{i:05d}"}, "value": [1.5, str(i)]} for i in range(2000)]
    payload = orjson.dumps(vector_answer(items))
    turns, result = run_counting_turns(instant_in_slices(payload, slice_bytes=4096))
    assert result == parse_instant(orjson.loads(payload))
    assert len(payload) // 4200 <= turns <= len(payload) // 4096 + 1


def test_a_slice_that_is_not_series_fails_as_the_whole_decode_does() -> None:
    series = '{"metric":{},"value":[1,"2"]}'
    payload = f'{{"status":"success","data":{{"resultType":"vector","result":[{series},{series},5]}}}}'.encode()
    with pytest.raises(PrometheusMalformedResponse):
        decoded_in_slices(payload, slice_bytes=1)


@given(st.lists(series, max_size=8))
def test_the_filter_leaves_out_what_it_rejects_and_counts_it(items: list[dict[str, Any]]) -> None:
    payload = orjson.dumps(vector_answer(items))

    def keep(labels: Any) -> bool:
        return str(labels.get("pod", "")).startswith("a")

    result = decoded_in_slices(payload, keep)
    whole = parse_instant(orjson.loads(payload))
    assert result.vector == tuple(s for s in whole.vector if keep(s.labels))
    assert result.left_out == len(whole.vector) - len(result.vector)


@pytest.mark.parametrize(
    "document",
    [
        {"status": "success", "data": {"resultType": "scalar", "result": [1.5, "2"]}},
        {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "2"]]}]}},
        {"status": "success", "data": {"result": [], "resultType": "vector"}},
        {"data": {"resultType": "vector", "result": [{"metric": {"a": "b"}, "value": [1, "2"]}]}, "status": "success"},
    ],
)
def test_other_layouts_decode_whole(document: dict[str, Any]) -> None:
    payload = orjson.dumps(document)
    assert decoded_in_slices(payload) == parse_instant(orjson.loads(payload))


@pytest.mark.parametrize(
    "payload",
    [
        b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"2"]},',
        b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}',
        b'{"status":"error","data":{"resultType":"vector","result":[]}}',
        b"\xff\xfe",
        b"<html>",
    ],
)
def test_malformed_answers_fail_as_the_whole_decode_does(payload: bytes) -> None:
    with pytest.raises(PrometheusMalformedResponse):
        decoded_in_slices(payload)


def test_a_vector_is_a_sequence_of_series() -> None:
    series = [Series({"pod": "a"}, 1.0, "1"), Series({"pod": "b"}, 2.0, "NaN"), Series({}, 3.0, "0.5")]
    vector = Vector.of(series)
    assert len(vector) == 3 and vector[1] == series[1] and vector[-1].labels == {}
    assert isinstance(vector[0], Series) and vector[0].value == "1"
    assert list(vector) == series and vector == tuple(series) and tuple(series) == vector
    assert vector[1:] == series[1:] and isinstance(vector[1:], Vector)
    assert list(vector.rows(1, 2)) == [({"pod": "b"}, 2.0, "NaN")] and list(rows(series, 2)) == [series[2]]
    assert vector != tuple(series[:2]) and vector != "abc" and Vector() == () and not Vector()
    with pytest.raises(TypeError):
        hash(vector)


@pytest.mark.parametrize("in_slices", [True, False])
def test_an_answer_held_adds_no_tracked_object_per_series(in_slices: bool) -> None:
    """What keeps a batched sync's answers out of the cyclic collector's walks (docs/benchmarks-history.md,
    "Loop lag at 10,000 targets"): 20,000 series decoded and held add a handful of tracked objects, not one
    per series."""
    items = [{"metric": {"namespace": "ns", "pod": f"pod-{i}"}, "value": [1.5, str(i)]} for i in range(20_000)]
    payload = orjson.dumps(vector_answer(items))
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        result = decoded_in_slices(payload, slice_bytes=4096) if in_slices else parse_instant(orjson.loads(payload))
        held = len(gc.get_objects()) - before
    finally:
        gc.enable()
    assert len(result.vector) == 20_000 and held < 20
