"""Real servers on loopback for tests, benchmarks and demos (never used by the service itself).

The names below load on first use, so that importing a light module of this package (the ``demo``
command's arguments, when the ``autoscaler`` parser is built) does not import aiohttp.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autoscaler_sandbox.exporter import MetricsExporter
    from autoscaler_sandbox.prometheus import PrometheusSandbox, SandboxError, ScrapeTarget, find_binary

__all__ = ["MetricsExporter", "PrometheusSandbox", "SandboxError", "ScrapeTarget", "find_binary"]

_MODULES = {
    "MetricsExporter": "exporter",
    "PrometheusSandbox": "prometheus",
    "SandboxError": "prometheus",
    "ScrapeTarget": "prometheus",
    "find_binary": "prometheus",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
