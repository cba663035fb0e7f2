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
PACKAGES = ("autoscaler", "kube_emulator", "autoscaler_sandbox")
# Modules known to be over the limit while they are being split elsewhere (issue 14). The list only
# shrinks: a module split below the limit must leave it (the test says so), and the lead empties it when
# the branches doing the splits are merged.
PENDING = {
    # the lead is rewriting these for issue 13
    "autoscaler/kube/leader.py",
    "autoscaler/service/app.py",
    "autoscaler/service/metrics.py",
    # another helper is splitting the emulator
    "kube_emulator/app.py",
    "kube_emulator/controllers.py",
    "kube_emulator/operations.py",
    "kube_emulator/protobuf.py",
    "kube_emulator/tables.py",
}


def module_lines() -> dict[str, int]:
    """Every module of the packages, by path from the repository root, and its number of lines."""
    return {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_no_module_is_over_the_line_limit() -> None:
    """Small modules: none over 400 lines (as `ruff format` writes them, which test_ruff_format keeps)."""
    lines = module_lines()
    assert len(lines) > 100, "the packages' modules were not found"
    over = {path: count for path, count in lines.items() if count > MAX_MODULE_LINES}
    unexpected = {path: count for path, count in over.items() if path not in PENDING}
    assert not unexpected, f"modules over {MAX_MODULE_LINES} lines (split them by concept): {unexpected}"
    done = sorted(PENDING - over.keys())
    assert not done, f"no longer over {MAX_MODULE_LINES} lines (or gone): remove them from PENDING: {done}"
