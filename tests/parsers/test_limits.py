"""The limits themselves: depth, size, the data model (decoding JSON too deep for ``json.loads``:
tests/kube/test_jsondecode.py)."""

from __future__ import annotations

import sys
from datetime import date
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.service.cluster.targets import error_text
from autoscaler.values.fields import ErrorList, FieldError, Obj, SpecError, to_quantity
from autoscaler.values.limits import MAX_DEPTH, MAX_VALUES, _check_with_paths, _within_limits, check_document
from autoscaler.values.yaml_files import parse_yaml_text


def problems(value: object, **kwargs: Any) -> list[str]:
    errors = ErrorList()
    check_document(value, "spec", errors, **kwargs)
    return [str(e) for e in errors.items]


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": [value]}
    return value


def test_depth_is_counted_in_objects_and_lists_and_reported_where_it_is_crossed() -> None:
    assert problems(nested(MAX_DEPTH // 2)) == []  # exactly MAX_DEPTH levels
    assert problems(nested(MAX_DEPTH // 2 + 1)) == [
        "spec" + ".a[0]" * (MAX_DEPTH // 2) + ": nested too deeply: more than 32 levels of objects and lists"
    ]
    assert problems({"a": 1}, level=MAX_DEPTH + 1) == [
        "spec: nested too deeply: more than 32 levels of objects and lists"
    ]


def test_a_document_nested_far_deeper_than_python_recurses_is_checked_without_recursion() -> None:
    deep: Any = 1
    for _ in range(sys.getrecursionlimit() * 5):
        deep = [deep]
    assert len(problems(deep)) == 1


def test_values_are_counted_with_shared_references_written_out() -> None:
    laughs: Any = ["x"] * 10
    for _ in range(8):
        laughs = [laughs] * 10  # 10^9 values written out, a few hundred objects in memory
    assert problems(laughs) == [
        f"spec: too large: more than {MAX_VALUES:,} values (lists, objects and scalars, "
        "counted with YAML aliases written out)"
    ]


def test_only_the_json_data_model_passes() -> None:
    assert problems({"a": [1, 2.5, True, None, "x"]}) == []
    assert sorted(problems({1: "a", "d": date(2024, 1, 1), "b": b"x", "s": {1, 2}, "k" * 2000: 1})) == sorted(
        [
            "spec: a key must be a string, not integer (1)",
            "spec.d: unsupported value of type date: only objects, lists, strings, numbers, booleans and null",
            "spec.b: unsupported value of type bytes: only objects, lists, strings, numbers, booleans and null",
            "spec.s: unsupported value of type set: only objects, lists, strings, numbers, booleans and null",
            f"spec.{'k' * 40}…{'k' * 20}: key too long: 2,000 characters (at most 1,024)",
        ]
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: !!binary aGVsbG8=", "line 1, column 4: binary data (!!binary) is not supported"),
        ("a: !!set {x}", "line 1, column 4: a set (!!set) is not supported"),
        ("on: 1", "line 1, column 1: a key must be a string, not boolean (quote it)"),
        ("a: 1\nb: 2\na: 3", 'line 3, column 1: duplicate key "a" (first at line 1)'),
        ("a: " + "9" * 5000, "line 1, column 4: integer too long: more than 4300 digits"),
        ("a: !!float ''", "line 1, column 4: '' is not a valid float"),
        ("a: " + "[" * 40 + "]" * 40, "line 1, column 35: nested too deeply: more than 32 levels"),
        ("a: 1\n---\nb: 2", "2 YAML documents: expected one"),
    ],
)
def test_yaml_outside_the_data_model_is_refused_with_its_line_and_column(text: str, problem: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_yaml_text(text, "f.yaml")
    assert problem in str(caught.value)


def test_yaml_keeps_dates_as_text_and_merges_keys() -> None:
    assert parse_yaml_text("d: 2024-01-01\nt: 2024-01-01T10:00:00Z\n", "f") == {
        "d": "2024-01-01",
        "t": "2024-01-01T10:00:00Z",
    }
    assert parse_yaml_text("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n", "f")["use"] == {"x": 1, "y": 3}


def test_numbers_and_quantities_past_what_the_api_carries_are_refused() -> None:
    errors = ErrorList()
    view = Obj({"huge": 10**400, "inf": float("inf"), "int": 2**64, "ok": 10**300}, "s", errors)
    assert view.number("huge") is None and view.number("inf") is None and view.number("ok") == 1e300
    assert view.integer("int") is None
    assert to_quantity("9223372036854775807m", "q", errors) is not None
    assert to_quantity("9223372036854775808m", "q", errors) is None
    assert to_quantity("9" * 1001, "q", errors) is None
    assert to_quantity(10**20, "q", errors) is None
    assert [str(e) for e in errors.items] == [
        "s.huge: must be a finite number",
        "s.inf: must be a finite number",
        "s.int: must be less than or equal to 9223372036854775807",
        "q: must be at most 9223372036854775807m (a milli-value fits in 64 bits)",
        f"q: invalid quantity '{'9' * 99}: quantity has 1,001 digits: at most 1000",
        "q: must be at most 9223372036854775807m (a milli-value fits in 64 bits)",
    ]


def test_a_condition_message_lists_twenty_problems_and_counts_the_rest() -> None:
    errors = [FieldError(f"spec.metrics[{i}]", "must be an object") for i in range(25)]
    text = error_text(errors)
    assert text.count("must be an object") == 20 and text.endswith("; and 5 more problems")


_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.sampled_from([b"bytes", date(2024, 5, 7), object()]),  # what JSON cannot hold
)
_KEYS = st.one_of(st.text(max_size=3), st.just("k" * 1025), st.integers(0, 3))
_DOCUMENTS = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
    max_leaves=30,
)


@given(_DOCUMENTS, st.integers(1, 4), st.integers(1, 6), st.integers(1, 40))
def test_the_quick_walk_finds_a_problem_exactly_when_the_walk_with_paths_does(
    document: object, level: int, max_depth: int, max_values: int
) -> None:
    """The walk without paths (every document takes it) and the one that names the problems agree on
    whether there is one, so a document the quick walk passes is one the full walk would have passed."""
    errors = ErrorList()
    full = _check_with_paths(document, "spec", errors, level, max_depth, max_values)
    assert _within_limits(document, level, max_depth, max_values) == full == (not errors.items)
