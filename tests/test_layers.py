"""The package's layers, read from the source: each arrow points one way.

* ``autoscaler.values`` (value types and their validation) imports nothing else of ``autoscaler``;
* ``autoscaler.core`` (the HPA's and HVPA's decisions) imports nothing of the shell around it;
* no module imports itself through others (a circle), not even by an import inside a function;
* the test machinery (``kube_emulator``, ``autoscaler_sandbox``) stays out of the product: ``autoscaler run``
  never loads it, the package imports it only inside the two demo commands, and the emulator (the tests'
  oracle for Kubernetes) shares no code with what it judges.

Every import counts: at the top of a module, inside a function, or (for the layers) under
``TYPE_CHECKING``, which the circles leave out: a name imported only for annotations is never loaded.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "autoscaler"
ROOT = PACKAGE.parent
SHELL = ("service", "loop", "kube", "prometheus", "cli", "simulate", "backtest", "plot", "convert")
TEST_MACHINERY = ("kube_emulator", "autoscaler_sandbox")


def imported_modules(source: str, module: str, *, annotations: bool = True, nested: bool = True) -> set[str]:
    """Every module the source of ``module`` imports, by absolute name (relative imports resolved);
    without ``annotations``, those imported under ``if TYPE_CHECKING:`` are left out; without ``nested``,
    those imported inside a function or class (what loading the module does not load)."""
    package = module.rpartition(".")[0]
    names: set[str] = set()
    tree = ast.parse(source, module)
    skipped: set[int] = set()
    if not annotations:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped.update(id(inner) for inner in ast.walk(node))
    if not nested:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                skipped.update(id(inner) for inner in ast.walk(node) if inner is not node)
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
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules(package: str) -> dict[str, Path]:
    return {module_name(path): path for path in sorted((ROOT / package).rglob("*.py"))}


def loaded_with(starts: tuple[str, ...], *, nested: bool) -> set[str]:
    """Every name imported, directly or through others, by loading ``starts`` (``nested``: and by running
    any of their functions, and of what those import); loading a module loads its package's ``__init__``,
    but runs none of its functions."""
    modules = package_modules("autoscaler")
    seen: set[tuple[str, bool]] = set()
    todo = [(start, nested) for start in starts]
    while todo:
        module, deep = todo.pop()
        if (module, deep) in seen:
            continue
        seen.add((module, deep))
        parent = module.rpartition(".")[0]
        if parent:
            todo.append((parent, False))
        if module in modules:
            found = imported_modules(
                modules[module].read_text(encoding="utf-8"), module, annotations=False, nested=deep
            )
            todo.extend((name, deep) for name in found if name in modules or name.startswith(TEST_MACHINERY))
    return {module for module, _ in seen}


def import_circles() -> list[list[str]]:
    """Every set of modules that import one another (Tarjan's strongly connected components). A package's
    ``__init__`` is left out: it gathers its modules' names by design, and is no module's dependency."""
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"}
    graph = {
        module: sorted(
            name
            for name in imported_modules(path.read_text(encoding="utf-8"), module, annotations=False)
            if name in paths and name != module
        )
        for module, path in paths.items()
    }
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


def test_autoscaler_run_never_loads_the_test_machinery() -> None:
    """What the ``autoscaler`` command loads to read its arguments, and everything the ``run`` command and
    the service import anywhere (inside functions too): no emulator, no sandbox."""
    started = loaded_with(("autoscaler.cli",), nested=False)
    running = loaded_with(("autoscaler.cli.run", "autoscaler.service.app"), nested=True)
    assert {
        "autoscaler.cli.demo",
        "autoscaler.service.sync.reconciler",
        "autoscaler.prometheus.client",
    } <= started | running
    assert sorted(name for name in started | running if name.startswith(TEST_MACHINERY)) == []


def test_the_package_imports_the_test_machinery_only_inside_the_demo_commands() -> None:
    found = sorted(
        f"{module} imports {name}"
        for module, path in package_modules("autoscaler").items()
        for name in imported_modules(path.read_text(encoding="utf-8"), module)
        if name.startswith(TEST_MACHINERY)
    )
    assert found and {line.split()[0] for line in found} == {"autoscaler.cli.demo", "autoscaler.cli.backtest"}
    at_load = sorted(
        f"{module} imports {name}"
        for module, path in package_modules("autoscaler").items()
        for name in imported_modules(path.read_text(encoding="utf-8"), module, annotations=False, nested=False)
        if name.startswith(TEST_MACHINERY)
    )
    assert at_load == []


def test_the_emulator_shares_no_code_with_what_it_judges() -> None:
    found = sorted(
        f"{module} imports {name}"
        for module, path in package_modules("kube_emulator").items()
        for name in imported_modules(path.read_text(encoding="utf-8"), module)
        if name.startswith("autoscaler")
    )
    assert found == []


def test_no_module_imports_itself_through_others() -> None:
    assert import_circles() == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        (
            "from autoscaler.service.settings import X\n",
            {"autoscaler.service.settings", "autoscaler.service.settings.X"},
        ),
        ("def f():\n    import autoscaler.kube.api\n", {"autoscaler.kube.api"}),
        ("from .. import files\n", {"autoscaler", "autoscaler.files"}),
        ("from ..kube import api\n", {"autoscaler.kube", "autoscaler.kube.api"}),
    ],
)
def test_the_check_sees_every_kind_of_import(source: str, found: set[str]) -> None:
    """The check itself: an import inside a function, or a relative one, is seen."""
    assert imported_modules(source, "autoscaler.core.probe") == found


def test_imports_for_annotations_only_are_told_apart() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from autoscaler.kube import api\n"
    assert "autoscaler.kube.api" in imported_modules(source, "autoscaler.core.probe")
    assert "autoscaler.kube.api" not in imported_modules(source, "autoscaler.core.probe", annotations=False)


def test_imports_a_module_does_not_run_when_loaded_are_told_apart() -> None:
    source = "import json\ndef f():\n    import autoscaler.kube.api\nclass C:\n    from autoscaler import core\n"
    assert imported_modules(source, "autoscaler.core.probe", nested=False) == {"json"}
