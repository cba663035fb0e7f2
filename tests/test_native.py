"""The compiled modules' list, how the service finds out which run compiled, and the in-place build's
staleness check. In CI (``AUTOSCALER_EXPECT_COMPILED=1``, set by ``.ci/run`` after building them in place),
every listed module must run compiled: the suite then tests what the image ships."""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autoscaler import native

ROOT = Path(__file__).resolve().parents[1]


def test_every_listed_module_exists_and_is_listed_once() -> None:
    assert len(set(native.COMPILED)) == len(native.COMPILED)
    for module in native.COMPILED:
        assert native.source_path(module).is_file(), module
        importlib.import_module(module)


def test_a_compiled_class_is_extended_only_by_listed_modules() -> None:
    """mypyc refuses a Python subclass of a compiled class at import: every class deriving from one defined in a
    listed module is defined in a listed module itself."""
    listed = set(native.COMPILED)
    compiled_classes = {
        value
        for module in listed
        for value in vars(importlib.import_module(module)).values()
        if isinstance(value, type) and value.__module__ == module
    }
    for path in (ROOT / "autoscaler").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if module in listed or module == "autoscaler.__main__":
            continue
        try:
            loaded = importlib.import_module(module)
        except ImportError:  # an optional extra not installed (plots): the module cannot run here at all
            continue
        for value in vars(loaded).values():
            if isinstance(value, type) and value.__module__ == module:
                bases = set(value.__mro__[1:]) & compiled_classes
                assert not bases, f"{module}.{value.__name__} extends {bases}: list {module} in autoscaler/native.py"


def test_stale_names_a_module_whose_source_is_newer_than_its_extension(tmp_path: Path) -> None:
    module = native.COMPILED[0]
    (tmp_path / "setup.py").write_text("")  # a checkout
    source = native.source_path(module, tmp_path)
    source.parent.mkdir(parents=True)
    source.write_text("x = 1\n")
    extension = source.with_name(source.stem + importlib.machinery.EXTENSION_SUFFIXES[0])
    extension.write_bytes(b"")
    now = time.time()
    os.utime(source, (now - 60, now - 60))
    os.utime(extension, (now, now))
    assert native.stale(tmp_path) == ()
    os.utime(source, (now + 60, now + 60))  # edited after the build
    assert native.stale(tmp_path) == (module,)
    (tmp_path / "setup.py").unlink()  # installed: the files' times say nothing
    assert native.stale(tmp_path) == ()
    (tmp_path / "setup.py").write_text("")
    extension.unlink()  # not compiled at all: nothing stale
    assert native.stale(tmp_path) == ()


def test_compiled_says_what_python_imports() -> None:
    found = native.compiled()
    assert set(found) <= set(native.COMPILED)
    for module in native.COMPILED:
        origin = importlib.import_module(module).__file__ or ""
        assert (module in found) == origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), module


@pytest.mark.skipif(os.environ.get("AUTOSCALER_EXPECT_COMPILED") != "1", reason="only where the build compiled them")
def test_every_listed_module_runs_compiled_and_current() -> None:
    assert native.compiled() == native.COMPILED
    assert native.stale() == ()


@pytest.mark.skipif(os.environ.get("AUTOSCALER_EXPECT_COMPILED") != "1", reason="only where the build compiled them")
def test_a_compiled_record_refuses_an_assignment() -> None:
    # Its fields are Final (autoscaler/values/records.py): compiled, without a setter; mypy refuses it in both.
    from autoscaler.core.settings import Tolerances

    tolerances = Tolerances()
    with pytest.raises(AttributeError):
        tolerances.scale_up = 0.5  # type: ignore[misc]
    assert tolerances.scale_up == 0.1


def test_build_labels_say_what_runs() -> None:
    import platform

    version, python, compiled = native.build_labels()
    assert version and python == platform.python_version()
    assert compiled == native.summary() in ("all", "none", "some")


def test_the_console_script_runs_the_modules_python_m_runs(tmp_path: Path) -> None:
    """The installed ``autoscaler`` command, started away from the checkout, replays a scenario on the same
    modules as this process: compiled ones too, when built in place (their shared runtime inside the package,
    where an editable install's finder maps it)."""
    script = Path(sys.executable).with_name("autoscaler")
    assert script.is_file(), f"{script}: the package's console script is not installed beside {sys.executable}"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    probe = "import autoscaler.native as n; print(','.join(n.compiled()))"
    imported = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    assert imported.stdout.strip() == ",".join(native.compiled())
    scenario = ROOT / "config" / "scenarios" / "quickstart.yaml"
    replay = subprocess.run([script, "simulate", scenario], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert replay.returncode == 0, replay.stderr
    assert "* = scaled this step" in replay.stdout
