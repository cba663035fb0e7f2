"""The package's build: pyproject.toml holds everything but the compiled modules.

With ``AUTOSCALER_COMPILE=1`` in the environment, the modules ``autoscaler/native.py`` lists are compiled
with mypyc (mypy's compiler): the build then needs a C compiler and the Python headers, and asks the build
front end for mypy; what it makes needs neither at run time. The container image's build does this.
Without it, the package is pure Python.

    AUTOSCALER_COMPILE=1 pip wheel .                            # a compiled wheel
    AUTOSCALER_COMPILE=1 python setup.py build_ext --inplace    # compiled in place in a checkout (mypy installed)
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
MYPY = "mypy>=1.10"


def compile_requested() -> bool:
    return os.environ.get("AUTOSCALER_COMPILE", "").strip().lower() in ("1", "true", "yes")


def compiled_extensions(mypycify: Any) -> list[Any]:
    """mypyc's extension modules for ``autoscaler.native.COMPILED`` (read from the file: nothing of the
    package is importable before it is built)."""
    spec = importlib.util.spec_from_file_location("autoscaler_native", ROOT / "autoscaler" / "native.py")
    assert spec is not None and spec.loader is not None
    native = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(native)
    paths = [native.source_path(module, ROOT).relative_to(ROOT).as_posix() for module in native.COMPILED]
    # One group, its shared runtime named by ``native.RUNTIME``: inside the package, where an editable
    # install's finder (which maps only ``autoscaler``) finds it too; a top-level name would put it beside the
    # package, out of the console script's reach.
    group = native.RUNTIME.removesuffix("__mypyc")
    return list(mypycify(paths, opt_level="3", group_name=group))


class BuildExtensions(build_ext):  # type: ignore[misc]  # setuptools is untyped
    """Built in place, every extension gets the build's time, copied back or not. mypyc's per-module
    extensions are shims whose C rarely changes, the code being in the group's runtime: setuptools copies an
    unchanged one back with its old time, and ``native.stale`` would call the module's new source stale."""

    def run(self) -> None:
        super().run()
        if self.inplace:
            for extension in self.extensions:
                os.utime(self.get_ext_fullpath(extension.name))


if not compile_requested():
    setup()
else:
    try:
        from mypyc.build import mypycify
    except ImportError:
        # A build front end asks for the build's requirements first (PEP 517): mypy, installed before the
        # build proper runs this again.
        setup(setup_requires=[MYPY])
    else:
        setup(ext_modules=compiled_extensions(mypycify), cmdclass={"build_ext": BuildExtensions})
