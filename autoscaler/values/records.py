"""The one way to write a record the engine makes many of, and :func:`record_problems`, the rule as code.

A record is a dataclass written so::

    @dataclass(slots=True, init=False, unsafe_hash=True)
    class Scale:
        replicas: Final[int]
        selector: Final[str | None]

        def __init__(self, replicas: int, selector: str | None = None) -> None:
            self.replicas = replicas
            self.selector = selector

- **Read-only by** ``Final``: mypy refuses an assignment outside ``__init__`` (``mypy --strict`` is a gate), and
  mypyc compiles a ``Final`` attribute without a setter, so the compiled build refuses one at run time too
  (an ``AttributeError``); the interpreted build does not. ``==``, ``hash`` (``unsafe_hash``: over the
  compared fields, as a frozen dataclass's), ``repr``, ``dataclasses.replace`` and ``match`` are the
  dataclass's own. A field's default is its ``__init__`` parameter's (``Final`` with a value in the class
  body would be a constant to mypy); a ``default_factory`` is a ``None`` default the ``__init__`` fills in.
- **The** ``__init__`` **written out, plain stores.** mypyc compiles it into a native constructor; a
  dataclass's generated ``__init__`` is made by ``exec`` at import and runs interpreted even in a compiled
  module, and a frozen one stores through ``object.__setattr__``.

Measured (callgrind, instructions to construct a five-field record from a loop in the same module, CPython
3.11, mypy 2.4; docs/compiled-boundary.md has the command):

========================================  ========  ===========
way                                       compiled  interpreted
========================================  ========  ===========
this module's way                              415        2,292
frozen, ``__init__`` via object.__setattr__    402        8,665
``@dataclass(frozen=True, slots=True)``      8,336        8,584
the same with a generated quicker init       5,178        5,176
``@dataclass(slots=True)`` (not frozen)      2,952        2,280
========================================  ========  ===========

Why no decorator of ours: mypyc makes a native class only of a class whose decorator is
``dataclasses.dataclass`` itself; behind any other it builds a plain Python class (its ``__init__``
interpreted, ~10 times the instructions, and assignment no longer refused).

:func:`record_problems` is what tests/values/test_records.py holds every record of the compiled modules
(``autoscaler.native.COMPILED``) to.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

__all__ = ["record_problems"]


def record_problems(cls: type[Any]) -> list[str]:
    """How ``cls`` departs from the one way (empty: it is a record written so). Read from the class as
    Python builds it (its source loaded as plain Python: compiled, annotations and signatures are gone)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None:
        return ["not a dataclass"]
    problems = []
    if params.frozen:
        problems.append("frozen (its __init__ would need object.__setattr__)")
    if params.init:
        problems.append("the dataclass's generated __init__ (init=False and a written one)")
    if not params.eq or "__hash__" not in cls.__dict__ or cls.__dict__["__hash__"] is None:
        problems.append("no field-wise == and hash (eq and unsafe_hash)")
    if "__slots__" not in cls.__dict__:
        problems.append("no slots")
    fields = dataclasses.fields(cls)
    own = inspect.get_annotations(cls)
    for field in fields:
        annotation = own.get(field.name)
        if field.init and annotation is not None and not str(annotation).startswith("Final["):
            problems.append(f"{field.name} is not Final")
        if field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING:
            problems.append(f"{field.name} has its default in the class body, not in __init__")
    init = cls.__dict__.get("__init__")
    if init is None:
        problems.append("no __init__ written in the class")
    else:
        parameters = [p.name for p in list(inspect.signature(init).parameters.values())[1:]]
        expected = [field.name for field in fields if field.init]
        if parameters != expected:
            problems.append(f"__init__ takes {parameters}, the fields are {expected}")
    return problems
