"""The package's layers, read from the source: each arrow points one way.

* ``autoscaler.values`` (value types and their validation) imports nothing else of ``autoscaler``;
* ``autoscaler.core`` (the HPA's and HVPA's decisions) imports nothing of the shell around it;
* no module imports itself through others (a circle), not even by an import inside a function.

Every import counts: at the top of a module, inside a function, or (for the layers) under
``TYPE_CHECKING``, which the circles leave out: a name imported only for annotations is never loaded.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "autoscaler"
SHELL = ("service", "kube", "prometheus", "cli", "sandbox", "emulator", "simulate", "backtest", "plot", "convert")


def imported_modules(source: str, module: str, *, annotations: bool = True) -> set[str]:
    """Every module the source of ``module`` imports, by absolute name (relative imports resolved);
    without ``annotations``, those imported under ``if TYPE_CHECKING:`` are left out."""
    package = module.rpartition(".")[0]
    names: set[str] = set()
    tree = ast.parse(source, module)
    skipped: set[int] = set()
    if not annotations:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped.update(id(inner) for inner in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # `from autoscaler import files`
    return names


def modules_of(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


def offences(layer: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    found = []
    for path in modules_of(layer):
        for name in sorted(imported_modules(path.read_text(encoding="utf-8"), module_name(path))):
            if name.startswith(forbidden) and not name.startswith(allowed):
                found.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    return found


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def import_circles() -> list[list[str]]:
    """Every set of modules that import one another (Tarjan's strongly connected components). A package's
    ``__init__`` is left out: it gathers its modules' names by design, and is no module's dependency."""
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"}
    graph = {module: sorted(name for name in imported_modules(path.read_text(encoding="utf-8"), module,
                                                              annotations=False)
                            if name in paths and name != module)
             for module, path in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in graph[module]:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def test_there_are_modules_to_check() -> None:
    assert len(modules_of("values")) >= 6 and len(modules_of("core")) >= 20


def test_the_values_layer_imports_nothing_of_the_rest_of_the_package() -> None:
    assert offences("values", ("autoscaler",), allowed=("autoscaler.values",)) == []


def test_the_core_imports_nothing_of_the_shell() -> None:
    assert offences("core", tuple(f"autoscaler.{part}" for part in SHELL)) == []


def test_no_module_imports_itself_through_others() -> None:
    assert import_circles() == []


@pytest.mark.parametrize(("source", "found"), [
    ("from autoscaler.service.settings import X\n", {"autoscaler.service.settings", "autoscaler.service.settings.X"}),
    ("def f():\n    import autoscaler.kube.api\n", {"autoscaler.kube.api"}),
    ("from .. import files\n", {"autoscaler", "autoscaler.files"}),
    ("from ..kube import api\n", {"autoscaler.kube", "autoscaler.kube.api"}),
])
def test_the_check_sees_every_kind_of_import(source: str, found: set[str]) -> None:
    """The check itself: an import inside a function, or a relative one, is seen."""
    assert imported_modules(source, "autoscaler.core.probe") == found


def test_imports_for_annotations_only_are_told_apart() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from autoscaler.kube import api\n"
    assert "autoscaler.kube.api" in imported_modules(source, "autoscaler.core.probe")
    assert "autoscaler.kube.api" not in imported_modules(source, "autoscaler.core.probe", annotations=False)
