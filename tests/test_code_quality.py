"""The code stays ruff-, ruff-format- and mypy-clean (all configured in pyproject.toml), in small modules."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff() -> None:
    result = run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    """One hand style: `ruff format .` would change nothing."""
    result = run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


MAX_MODULE_LINES = 400


def module_lines() -> dict[str, int]:
    """Every Python module of the repository (the packages, tests, benchmarks, scripts), by path from the
    root, and its number of lines."""
    return {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(ROOT.rglob("*.py"))
        if not {".venv", "build", ".git"} & set(path.relative_to(ROOT).parts)
    }


def test_no_module_is_over_400_lines() -> None:
    """Small modules a reader finds by concept: none over 400 lines (as `ruff format` leaves them, which
    test_ruff_format keeps)."""
    lines = module_lines()
    assert "autoscaler/core/sync.py" in lines, "the repository's modules were not found"
    over = {path: count for path, count in lines.items() if count > MAX_MODULE_LINES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split them by concept): {over}"
