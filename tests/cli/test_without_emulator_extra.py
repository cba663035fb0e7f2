"""Without the emulator extra (jsonschema, fastjsonschema, protobuf: pyproject's ``emulator``), ``autoscaler
demo`` says what to install, and the service's own commands work as before: the service never imports them.

Each run is a real ``autoscaler`` process whose import of one of the extra's packages fails, as an absent
package's would: a module of that name earlier on PYTHONPATH raises ImportError when imported."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from autoscaler.cli.demo import EMULATOR_EXTRA, EMULATOR_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
BROKEN = 'raise ImportError("this test hides the package")\n'


def hide(tmp_path: Path, modules: list[str]) -> Path:
    """A directory that, first on PYTHONPATH, makes each of ``modules`` fail to import."""
    for module in modules:
        top = module.split(".")[0]
        if top == module:
            (tmp_path / f"{top}.py").write_text(BROKEN)
        else:  # a package's module (google.protobuf): the package itself fails
            (tmp_path / top).mkdir(exist_ok=True)
            (tmp_path / top / "__init__.py").write_text(BROKEN)
    return tmp_path


def autoscaler(hidden: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "autoscaler", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("module", list(EMULATOR_PACKAGES))
def test_the_demo_without_an_emulator_package_says_what_to_install(module: str, tmp_path: Path) -> None:
    result = autoscaler(hide(tmp_path, [module]), "demo", "--quiet")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("autoscaler demo: "), result.stderr
    assert f"needs {EMULATOR_PACKAGES[module]} (the emulator extra)" in result.stderr, result.stderr
    assert "pip install 'autoscaler[emulator]'" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_the_demo_names_every_missing_package(tmp_path: Path) -> None:
    result = autoscaler(hide(tmp_path, list(EMULATOR_PACKAGES)), "demo")
    assert result.returncode == 2, result.stderr
    assert "needs jsonschema, fastjsonschema, protobuf (the emulator extra)" in result.stderr, result.stderr


def test_the_service_commands_need_no_emulator_package(tmp_path: Path) -> None:
    hidden = hide(tmp_path, list(EMULATOR_PACKAGES))
    result = autoscaler(hidden, "simulate", str(ROOT / "config" / "scenarios" / "quickstart.yaml"))
    assert result.returncode == 0, result.stderr
    imported = subprocess.run(
        [sys.executable, "-c", "import autoscaler.service.app, autoscaler.cli.run, autoscaler.cli.explain"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(hidden)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr


def test_the_extra_is_what_the_demo_checks_and_the_dev_install_gets_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extra = project["optional-dependencies"][EMULATOR_EXTRA]
    names = [requirement.split(">")[0].split("=")[0].split("<")[0].strip() for requirement in extra]
    assert names == list(EMULATOR_PACKAGES.values())
    assert not {name.lower() for name in names} & {d.split(">")[0].lower() for d in project["dependencies"]}
    assert f"autoscaler[{EMULATOR_EXTRA}]" in project["optional-dependencies"]["dev"]
    assert any(d.startswith("cel-python") for d in project["dependencies"]), "composite formulas need cel-python"
