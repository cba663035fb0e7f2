"""The benchmark's own modules (``bench/servicebench``), importable for a test's duration."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "bench"


@contextlib.contextmanager
def servicebench(name: str) -> Iterator[ModuleType]:
    """``servicebench.<name>``, with ``bench/`` on the import path until the block ends."""
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module(f"servicebench.{name}")
    finally:
        sys.path.remove(str(BENCH))
