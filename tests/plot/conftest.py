"""Plot tests need the plot extra: skipped locally without it, failing in CI (tests/guard.py)."""

from __future__ import annotations

from pathlib import Path

from tests.guard import Guard, missing_modules

_guard = Guard({"plot": missing_modules("matplotlib", "plotly", extra="plot")}, str(Path(__file__).parent))

pytest_runtest_setup, pytest_runtest_logreport, pytest_deselected, pytest_sessionfinish = _guard.hooks()
