"""The records whose ``__init__`` is written out (``@dataclass(..., init=False)`` in a compiled module, so
that mypyc compiles it: see :mod:`autoscaler.values.frozen`) take exactly the dataclass's fields and set
every one: a field added later without its line in ``__init__`` fails here, compiled or not.

Each module's source is loaded afresh as plain Python, so the check reads the ``__init__`` as written,
whether or not the package itself runs compiled."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from autoscaler import native


def _source_module(name: str) -> ModuleType:
    """``name`` loaded from its source, under a name of its own (the package's import is left alone)."""
    alias = f"_written_inits_{name.replace('.', '_')}"
    spec = importlib.util.spec_from_file_location(alias, native.source_path(name))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[alias] = module  # dataclasses look the module up while making the class
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[alias]
    return module


def _written() -> Iterator[tuple[str, type[Any]]]:
    for name in native.COMPILED:
        module = _source_module(name)
        for cls in vars(module).values():
            params = getattr(cls, "__dataclass_params__", None)
            if isinstance(cls, type) and cls.__module__ == module.__name__ and params is not None and not params.init:
                yield f"{name}.{cls.__qualname__}", cls


WRITTEN = dict(_written())


def test_the_records_every_sync_makes_have_their_init_written_out() -> None:
    # The ones a steady sync makes (tests count on them being found, so that the checks below run).
    for name in (
        "autoscaler.core.decision.Decision",
        "autoscaler.core.decision.TargetState",
        "autoscaler.core.results.MetricOutcome",
        "autoscaler.core.results.PodMetricResult",
        "autoscaler.core.observation.Observation",
        "autoscaler.core.sync.SyncState",
        "autoscaler.prometheus.planning.Member",
    ):
        assert name in WRITTEN


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_a_written_init_takes_the_fields_as_the_dataclass_would(name: str) -> None:
    cls = WRITTEN[name]
    fields = dataclasses.fields(cls)
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]  # without self
    assert [p.name for p in parameters] == [f.name for f in fields]
    for parameter, field in zip(parameters, fields, strict=True):
        kind = inspect.Parameter.KEYWORD_ONLY if field.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert parameter.kind is kind, field.name
        if field.default is not dataclasses.MISSING:
            assert parameter.default is field.default, field.name
        elif field.default_factory is not dataclasses.MISSING:
            assert parameter.default is None, f"{field.name}: None stands for the field's default_factory"
        else:
            assert parameter.default is inspect.Parameter.empty, field.name


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_a_written_init_sets_every_field_to_what_it_was_given(name: str) -> None:
    cls = WRITTEN[name]
    given = {field.name: object() for field in dataclasses.fields(cls)}
    made = cls(**given)
    assert {name: getattr(made, name) for name in given} == given


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_a_written_init_makes_defaults_as_the_dataclass_would(name: str) -> None:
    cls = WRITTEN[name]
    required = {f.name: object() for f in dataclasses.fields(cls) if _required(f)}
    made = cls(**required)
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            assert getattr(made, field.name) is field.default, field.name
        elif field.default_factory is not dataclasses.MISSING:
            assert getattr(made, field.name) == field.default_factory(), field.name


def _required(field: dataclasses.Field[Any]) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
