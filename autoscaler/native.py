"""The compiled build's boundary: which modules mypyc compiles, whether they run compiled, what build runs.

Two parts of the program run per sync and per pod, and only they are compiled: reading Prometheus' answers
into readings (``prometheus/``: the slicing decoder, sample values and times, the per-pod and value
readings, the reader, the query planner and builder) and the decision engine (``core/``: the decision, the
metrics and replica calculation, behavior, history, conditions, the sync step and the records they make;
``values/quantity``; ``kube/``'s pod records and index). The service, the loop toolkit, start-up and the
clients are plain Python. docs/compiled-boundary.md gives what each part costs interpreted and compiled,
and the rules a compiled module follows (records written as :mod:`autoscaler.values.records` says, no
function defined inside another, no Python subclass of its classes).

mypyc (the compiler mypy ships) builds C extensions from the same source ``mypy --strict`` checks. The
container image compiles them (``AUTOSCALER_COMPILE=1`` when building: ``setup.py``); a checkout installed
with ``pip install -e .`` runs them as Python unless built in place (docs/operations.md, "Compiled
modules"). The source is the same and the tests run on either. This module imports only the standard
library, as ``setup.py`` reads :data:`COMPILED` from it before anything is installed.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import importlib.util
import platform
from pathlib import Path

__all__ = ["COMPILED", "RUNTIME", "build_labels", "compiled", "is_extension", "stale", "summary"]

# Compiled together, as one group: a class compiled in one of them is extended only by compiled code, so
# ``kube.records`` (whose ``PodRecord`` extends ``core.observation``'s ``PodInfo``) is listed with the core.
# The rules and the figures: docs/compiled-boundary.md.
COMPILED: tuple[str, ...] = (
    "autoscaler.core.behavior",
    "autoscaler.core.conditions",
    "autoscaler.core.decision",
    "autoscaler.core.gomath",
    "autoscaler.core.history",
    "autoscaler.core.metrics",
    "autoscaler.core.observation",
    "autoscaler.core.pod_columns",
    "autoscaler.core.replicas",
    "autoscaler.core.rescale",
    "autoscaler.core.results",
    "autoscaler.core.settings",
    "autoscaler.core.spec",
    "autoscaler.core.sync",
    "autoscaler.kube.pods",
    "autoscaler.kube.records",
    "autoscaler.prometheus.extract",
    "autoscaler.prometheus.planning",
    "autoscaler.prometheus.queries",
    "autoscaler.prometheus.reader",
    "autoscaler.prometheus.sample_times",
    "autoscaler.prometheus.sample_values",
    "autoscaler.prometheus.slicing",
    "autoscaler.prometheus.value_readings",
    "autoscaler.values.quantity",
)

# The group's shared runtime: every compiled module's code is in it, and each module's own extension is a
# small shim that hands its import over (mypyc's layout). ``setup.py`` names the group after it; it lies in the
# package, where an editable install finds it too.
RUNTIME = "autoscaler._native__mypyc"

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def source_path(module: str, root: Path = _PACKAGE_ROOT) -> Path:
    """Where ``module``'s source is under ``root`` (the directory holding the ``autoscaler`` package)."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


def _extension(module: str, root: Path) -> Path | None:
    """The compiled form of ``module`` beside its source under ``root``, if there is one."""
    source = source_path(module, root)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = source.with_name(source.stem + suffix)
        if candidate.is_file():
            return candidate
    return None


def is_extension(path: str) -> bool:
    """Whether a module loaded from ``path`` (its ``__file__`` or spec's origin) runs compiled."""
    return path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def compiled() -> tuple[str, ...]:
    """The modules of :data:`COMPILED` that Python imports compiled (an extension module wins over the
    source beside it), whether installed from a compiled wheel or built in place."""
    found = []
    for module in COMPILED:
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
        if origin is not None and is_extension(origin):
            found.append(module)
    return tuple(found)


def stale(root: Path = _PACKAGE_ROOT) -> tuple[str, ...]:
    """The modules compiled in place under ``root`` whose source changed since: Python would run the old
    code, the extension winning over the source beside it. Only in a checkout (``setup.py`` beside the
    package): an installed wheel's files all get the time they were unpacked, in no particular order. An
    in-place build gives every extension it leaves the build's time (``setup.py``)."""
    if not (root / "setup.py").is_file():
        return ()
    found = []
    for module in COMPILED:
        extension = _extension(module, root)
        source = source_path(module, root)
        if extension is not None and source.is_file() and source.stat().st_mtime > extension.stat().st_mtime:
            found.append(module)
    return tuple(found)


def summary() -> str:
    """Whether the listed modules run compiled: ``all``, ``none`` or ``some`` (``autoscaler_build_info``)."""
    found = len(compiled())
    return "all" if found == len(COMPILED) else "none" if found == 0 else "some"


def build_labels() -> tuple[str, str, str]:
    """``autoscaler_build_info``'s labels: the package's version, Python's, and :func:`summary`."""
    try:
        version = importlib.metadata.version("autoscaler")
    except importlib.metadata.PackageNotFoundError:  # running from a source tree that is not installed
        version = "unknown"
    return version, platform.python_version(), summary()
