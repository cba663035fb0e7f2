"""The service's shape (issue 38): its object graph built in one module (service/wiring.py), the cyclic
collector controlled from one (loop/collector.py), and no constructor in autoscaler/service/ over 8
parameters: a wider one is a sign that the object builds its own parts (the wiring's job) or that its fields
want grouping into sub-records. Counted: an ``__init__``'s parameters (self excluded), a dataclass's or a
NamedTuple's fields (its own and those of a base record in the same module; ``init=False`` fields and
ClassVars excluded)."""

from __future__ import annotations

import ast
from pathlib import Path

PRODUCT = Path(__file__).resolve().parent.parent / "autoscaler"
SERVICE = PRODUCT / "service"
LIMIT = 8
# The shared parts of the running service: built by service/wiring.py, and nowhere else in the product.
WIRED = {
    "ApiWriter",
    "BackendRouter",
    "CachedView",
    "ClusterCaches",
    "ClusterScales",
    "ElectionThread",
    "Manager",
    "MetricsBatcher",
    "PodIndex",
    "SyncContext",
    "SyncRecorder",
    "TickTimers",
}


def _is_record(node: ast.ClassDef) -> bool:
    decorators = [ast.unparse(d) for d in node.decorator_list]
    bases = [ast.unparse(b) for b in node.bases]
    return any("dataclass" in d for d in decorators) or any(b.endswith("NamedTuple") for b in bases)


def _init_field(item: ast.stmt) -> bool:
    if not isinstance(item, ast.AnnAssign) or not isinstance(item.target, ast.Name):
        return False
    annotation = ast.unparse(item.annotation)
    if "ClassVar" in annotation or annotation.endswith("KW_ONLY"):
        return False
    value = ast.unparse(item.value) if item.value is not None else ""
    return not ("field(" in value and "init=False" in value.replace(" ", ""))


def _init_parameters(function: ast.FunctionDef) -> int:
    arguments = function.args
    return len(arguments.posonlyargs) + len(arguments.args) + len(arguments.kwonlyargs) - 1


def constructor_widths(source: str) -> dict[str, int]:
    """Each class of ``source`` and how many parameters its constructor takes."""
    classes = {node.name: node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)}

    def record_fields(node: ast.ClassDef) -> int:
        inherited = sum(
            record_fields(classes[name])
            for base in node.bases
            if (name := ast.unparse(base)) in classes and _is_record(classes[name])
        )
        return inherited + sum(1 for item in node.body if _init_field(item))

    widths: dict[str, int] = {}
    for name, node in classes.items():
        init = next((i for i in node.body if isinstance(i, ast.FunctionDef) and i.name == "__init__"), None)
        if init is not None:
            widths[name] = _init_parameters(init)
        elif _is_record(node):
            widths[name] = record_fields(node)
    return widths


def test_the_measure_counts_init_parameters_and_record_fields() -> None:
    source = """
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

class Wide:
    def __init__(self, a, b, *, c, d=1): ...

@dataclass(frozen=True)
class Base:
    a: int
    b: int
    LIMIT: ClassVar[int] = 3

@dataclass
class Child(Base):
    c: int = 0
    cache: dict = field(default_factory=dict, init=False)

class Pair(NamedTuple):
    left: int
    right: int
"""
    assert constructor_widths(source) == {"Wide": 4, "Base": 2, "Child": 3, "Pair": 2}


def test_no_constructor_in_the_service_takes_more_than_eight_parameters() -> None:
    wide = [
        f"{path.relative_to(SERVICE.parent.parent)}: {name} takes {width}"
        for path in sorted(SERVICE.rglob("*.py"))
        for name, width in constructor_widths(path.read_text(encoding="utf-8")).items()
        if width > LIMIT
    ]
    assert not wide, (
        f"constructors over {LIMIT} parameters (build the parts in service/wiring.py, or group the fields):\n"
        + "\n".join(wide)
    )


def _product_modules() -> list[tuple[str, ast.Module]]:
    return [
        (str(path.relative_to(PRODUCT.parent)), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PRODUCT.rglob("*.py"))
    ]


def _called_name(call: ast.Call) -> str | None:
    function = call.func
    return (
        function.id
        if isinstance(function, ast.Name)
        else function.attr
        if isinstance(function, ast.Attribute)
        else None
    )


def test_the_service_parts_are_built_in_the_wiring_only() -> None:
    built = {
        (module, name)
        for module, tree in _product_modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and (name := _called_name(node)) in WIRED
    }
    assert {name for _, name in built} == WIRED, "a part the wiring no longer builds: update WIRED"
    elsewhere = sorted(f"{module}: {name}(...)" for module, name in built if module != "autoscaler/service/wiring.py")
    assert not elsewhere, "service parts built outside service/wiring.py:\n" + "\n".join(elsewhere)


def test_the_cyclic_collector_is_controlled_from_loop_collector_only() -> None:
    importing = sorted(
        module
        for module, tree in _product_modules()
        for node in ast.walk(tree)
        if (isinstance(node, ast.Import) and any(alias.name == "gc" for alias in node.names))
        or (isinstance(node, ast.ImportFrom) and node.module == "gc")
    )
    assert importing == ["autoscaler/loop/collector.py"], importing
