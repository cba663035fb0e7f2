"""A quicker ``__init__`` for the frozen, slotted dataclasses every sync makes many of.

A frozen dataclass's generated ``__init__`` sets each field with ``object.__setattr__(self, name, value)``
(its own ``__setattr__`` refuses): the generic attribute path, ~140 ns a field on the benchmark machine
against ~30 ns for a plain assignment. A sync at 10,000 targets makes some twenty of these objects
(the decision, each metric's outcome and pod groups, the observation, the conditions…), and their
``__init__``\\ s were 6-7 % of the service's CPU (py-spy, BENCHMARKS.md). :func:`quick_init` gives such a
class an ``__init__`` with the same signature that sets each slot through the slot's own descriptor
(``member.__set__``), about half the cost; everything else (frozen assignment refused, equality, hash,
``dataclasses.replace``, repr, pickling) is the dataclass's own.

Both are generated at import, so they run interpreted even in a module mypyc compiles. The records a
steady sync makes in the compiled modules (the decision, the metric outcomes, the observation, the sync's
plan and state…) write their ``__init__`` out instead, ``object.__setattr__(self, name, value)`` a field in
a ``@dataclass(..., init=False)``: mypyc compiles that into a native constructor that stores each field
directly, ~510 instructions for five fields against ~5,200 through this module's (callgrind,
BENCHMARKS.md). tests/core/test_written_inits.py checks each against its fields.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar

__all__ = ["quick_init"]

_T = TypeVar("_T")
_FACTORY = object()  # the default of a parameter whose field has a default_factory


def quick_init(cls: type[_T]) -> type[_T]:
    """``cls`` (a ``@dataclass(frozen=True, slots=True)`` without ``__post_init__`` or init-only
    variables) with the quicker ``__init__``. A TypeError for any other class, or when the ``__init__``
    made would not take exactly what the dataclass's own takes."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a frozen dataclass with slots")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__")
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not field.init:
            raise TypeError(f"{cls.__name__}.{field.name} is not set by __init__")
        name = field.name
        if field.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = field.default
            parameter = f"{name}=_default_{name}"
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = field.default_factory
            parameter = f"{name}=_FACTORY"
            body.append(f"    if {name} is _FACTORY:\n        {name} = _factory_{name}()\n")
        else:
            parameter = name
        (keyword if field.kw_only else positional).append(parameter)
        namespace[f"_set_{name}"] = cls.__dict__[name].__set__  # the slot's member descriptor
        body.append(f"    _set_{name}(self, {name})\n")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    exec(f"def __init__({signature}):\n{''.join(body) or '    pass'}\n", namespace)
    init = namespace["__init__"]
    _check_same_parameters(cls, init)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


def _check_same_parameters(cls: type, init: Any) -> None:
    """The new ``__init__`` takes the same parameters, in the same kinds and order, with a default where
    the dataclass's has one (an init-only variable, for one, would be missing)."""

    def shape(function: Any) -> list[tuple[str, Any, bool]]:
        return [
            (p.name, p.kind, p.default is not inspect.Parameter.empty)
            for p in inspect.signature(function).parameters.values()
        ]

    if shape(init) != shape(cls.__init__):  # type: ignore[misc]
        raise TypeError(f"{cls.__name__}: the quicker __init__ would not take what the dataclass's takes")
