"""The package's layers, read from the source: each arrow points one way.

* ``autoscaler.values`` (value types and their validation) imports nothing else of ``autoscaler``;
* ``autoscaler.core`` (the HPA's and HVPA's decisions) imports nothing of the shell around it.

Every import counts: at the top of a module, inside a function, or under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "autoscaler"
SHELL = ("service", "kube", "prometheus", "cli", "sandbox", "emulator", "simulate", "backtest", "plot", "convert")


def imported_modules(source: str, module: str) -> set[str]:
    """Every module the source of ``module`` imports, by absolute name (relative imports resolved)."""
    package = module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source, module)):
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
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for name in sorted(imported_modules(path.read_text(encoding="utf-8"), module)):
            if name.startswith(forbidden) and not name.startswith(allowed):
                found.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    return found


def test_there_are_modules_to_check() -> None:
    assert len(modules_of("values")) >= 6 and len(modules_of("core")) >= 20


def test_the_values_layer_imports_nothing_of_the_rest_of_the_package() -> None:
    assert offences("values", ("autoscaler",), allowed=("autoscaler.values",)) == []


def test_the_core_imports_nothing_of_the_shell() -> None:
    assert offences("core", tuple(f"autoscaler.{part}" for part in SHELL)) == []


@pytest.mark.parametrize(("source", "found"), [
    ("from autoscaler.service.settings import X\n", {"autoscaler.service.settings", "autoscaler.service.settings.X"}),
    ("def f():\n    import autoscaler.kube.api\n", {"autoscaler.kube.api"}),
    ("from .. import files\n", {"autoscaler", "autoscaler.files"}),
    ("from ..kube import api\n", {"autoscaler.kube", "autoscaler.kube.api"}),
])
def test_the_check_sees_every_kind_of_import(source: str, found: set[str]) -> None:
    """The check itself: an import inside a function, or a relative one, is seen."""
    assert imported_modules(source, "autoscaler.core.probe") == found
