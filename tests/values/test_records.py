"""The one way to write a record (:mod:`autoscaler.values.records`): the rule as code, and every record of
the compiled modules held to it. A field added later without its ``__init__`` parameter and store fails
here, compiled or not.

Each compiled module's source is loaded afresh as plain Python, so the checks read the class as written,
whether or not the package itself runs compiled."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import pickle
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Final

import pytest

from autoscaler import native
from autoscaler.values.records import record_problems


@dataclass(slots=True, init=False, unsafe_hash=True)
class Point:
    x: Final[int]
    y: Final[int]
    tags: Final[tuple[str, ...]]

    def __init__(self, x: int, y: int = 0, tags: tuple[str, ...] = ()) -> None:
        self.x = x
        self.y = y
        self.tags = tags


@dataclass(slots=True, init=False, unsafe_hash=True)
class Cached:
    value: Final[int]
    _double: int | None = field(init=False, repr=False, compare=False)

    def __init__(self, value: int) -> None:
        self.value = value
        self._double = None


def test_a_record_written_the_one_way_has_no_problems() -> None:
    assert record_problems(Point) == []
    assert record_problems(Cached) == []  # a cache the record fills in later is not Final, nor compared


def test_a_record_of_the_one_way_is_a_value_as_a_frozen_dataclass_is() -> None:
    one = Point(1, 2)
    assert one == Point(1, 2) and one != Point(1, 3) and Cached(1) == Cached(1)
    assert hash(one) == hash(Point(1, 2)) and {Point(1, 2), Point(1, 2)} == {one}
    assert dataclasses.replace(one, y=3) == Point(1, 3)
    assert pickle.loads(pickle.dumps(one)) == one
    assert repr(one) == "Point(x=1, y=2, tags=())" and repr(Cached(1)) == "Cached(value=1)"
    assert not hasattr(one, "__dict__")
    assert dataclasses.astuple(one) == (1, 2, ())


def test_every_other_way_is_named() -> None:
    @dataclass(frozen=True, slots=True)
    class Frozen:
        x: int

    @dataclass(slots=True, init=False)
    class Unhashed:
        x: Final[int]

        def __init__(self, x: int) -> None:
            self.x = x

    @dataclass(init=False, unsafe_hash=True)
    class Unslotted:
        x: Final[int]

        def __init__(self, x: int) -> None:
            self.x = x

    @dataclass(slots=True, init=False, unsafe_hash=True)
    class Writable:
        x: int

        def __init__(self, x: int) -> None:
            self.x = x

    @dataclass(slots=True, init=False, unsafe_hash=True)
    class Forgotten:
        x: Final[int]
        y: Final[int]

        def __init__(self, x: int) -> None:
            self.x = x

    @dataclass(slots=True, init=False, unsafe_hash=True)
    class Defaulted:
        x: int = 1

        def __init__(self, x: int = 1) -> None:
            self.x = x

    class NotOne:
        pass

    assert any("frozen" in p for p in record_problems(Frozen))
    assert any("generated __init__" in p for p in record_problems(Frozen))
    assert record_problems(Unhashed) == ["no field-wise == and hash (eq and unsafe_hash)"]
    assert record_problems(Unslotted) == ["no slots"]
    assert record_problems(Writable) == ["x is not Final"]
    assert record_problems(Forgotten) == ["__init__ takes ['x'], the fields are ['x', 'y']"]
    assert "x has its default in the class body, not in __init__" in record_problems(Defaulted)
    assert record_problems(NotOne) == ["not a dataclass"]


def _source_module(name: str) -> ModuleType:
    """``name`` loaded from its source, under a name of its own (the package's import is left alone)."""
    alias = f"_records_{name.replace('.', '_')}"
    spec = importlib.util.spec_from_file_location(alias, native.source_path(name))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[alias] = module  # dataclasses look the module up while making the class
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[alias]
    return module


def _records() -> Iterator[tuple[str, type[Any]]]:
    """The value records of the compiled modules: every dataclass compared by value (an ``eq=False`` one
    is bookkeeping compared by identity, as the query planner's members and chunks)."""
    for name in native.COMPILED:
        module = _source_module(name)
        for cls in vars(module).values():
            params = getattr(cls, "__dataclass_params__", None)
            if isinstance(cls, type) and cls.__module__ == module.__name__ and params is not None and params.eq:
                yield f"{name}.{cls.__qualname__}", cls


RECORDS = dict(_records())


def test_the_records_every_sync_makes_are_among_them() -> None:
    # The ones a steady sync makes (tests count on them being found, so that the checks below run).
    for name in (
        "autoscaler.core.decision.Decision",
        "autoscaler.core.decision.TargetState",
        "autoscaler.core.results.MetricOutcome",
        "autoscaler.core.results.PodMetricResult",
        "autoscaler.core.observation.Observation",
        "autoscaler.core.sync.SyncState",
        "autoscaler.core.spec.TargetSpec",
        "autoscaler.values.quantity.Quantity",
    ):
        assert name in RECORDS


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_every_record_of_the_compiled_modules_is_written_the_one_way(name: str) -> None:
    assert record_problems(RECORDS[name]) == []


def _constructible(cls: type[Any]) -> type[Any]:
    """``cls``, unless a base of it from the package runs compiled: its native ``__init__`` checks each
    argument's type, so the stand-ins below are refused (the interpreted build's run checks those)."""
    for base in cls.__mro__[1:-1]:
        if native.is_extension(getattr(sys.modules[base.__module__], "__file__", None) or ""):
            pytest.skip(f"{base.__qualname__} runs compiled")
    return cls


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_a_records_init_sets_every_field_to_what_it_was_given(name: str) -> None:
    cls = _constructible(RECORDS[name])
    given = {f.name: object() for f in dataclasses.fields(cls) if f.init}
    made = cls(**given)
    assert {name: getattr(made, name) for name in given} == given


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_a_records_init_sets_every_field_with_only_what_it_needs(name: str) -> None:
    cls = _constructible(RECORDS[name])
    parameters = dataclasses.fields(cls)
    required = {
        p.name: object()
        for p in _init_parameters(cls)
        if p.default is p.empty and p.name in {f.name for f in parameters}
    }
    made = cls(**required)
    for f in parameters:
        getattr(made, f.name)  # an AttributeError if the __init__ left a slot empty


def _init_parameters(cls: type[Any]) -> list[inspect.Parameter]:
    return list(inspect.signature(cls.__init__).parameters.values())[1:]
