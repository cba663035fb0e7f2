"""The tolerant JSON reads: what is kept as it is, and what becomes empty."""

from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType

import pytest

from autoscaler.values.loose_json import as_list, as_mapping, mappings_in

ODD_SHAPES = [None, "text", 3, 2.5, True, ["a"], ("a", "b"), b"bytes"]


def test_an_object_is_kept_as_it_is() -> None:
    document = {"a": 1}
    assert as_mapping(document) is document


@pytest.mark.parametrize("mapping", [OrderedDict(a=1), MappingProxyType({"a": 1})])
def test_any_mapping_is_kept_as_it_is(mapping: object) -> None:
    assert as_mapping(mapping) is mapping


@pytest.mark.parametrize("value", ODD_SHAPES)
def test_anything_else_is_an_empty_object(value: object) -> None:
    assert as_mapping(value) == {}


def test_a_list_is_kept_with_all_its_items() -> None:
    items = [{"a": 1}, "text", None, 3]
    assert as_list(items) is items


@pytest.mark.parametrize("value", [None, "text", 3, {"a": 1}, ("a", "b")])
def test_anything_but_a_list_is_an_empty_list(value: object) -> None:
    assert as_list(value) == []


def test_mappings_in_keeps_only_the_objects_in_order() -> None:
    first, second = {"a": 1}, OrderedDict(b=2)
    assert mappings_in([first, "text", None, second, 3, ["x"]]) == [first, second]
    kept = mappings_in([first, second])
    assert kept[0] is first and kept[1] is second


@pytest.mark.parametrize("value", [None, "text", {"a": 1}, ({"a": 1},)])
def test_mappings_in_anything_but_a_list_is_empty(value: object) -> None:
    assert mappings_in(value) == []


def test_the_empty_answers_are_not_shared() -> None:
    # A caller that fills the list it got must not change what the next caller gets.
    first = as_list(None)
    first.append(1)
    assert as_list(None) == []
    assert mappings_in(None) == []
